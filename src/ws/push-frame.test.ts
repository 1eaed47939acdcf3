import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import { PushPayload, SUBSCRIPTION_ID_LENGTH, subscriptionIdBytes } from './push-frame.ts'

/**
 * Push frames are written to the socket as bytes Halyard built itself, and one buffer is patched
 * from subscriber to subscriber, so real `ws` clients must each read the documented push with their
 * own id: at every frame-length encoding (7-bit, 16-bit, 64-bit), and also when a socket queues
 * a frame instead of handing it to the kernel at once (the buffer must not be patched under it).
 */
describe('push frames', () => {
  let wss: WebSocketServer
  let url: string
  const payloads = [
    new PushPayload('1'),
    new PushPayload(
      JSON.stringify({ number: '0x10', hash: `0x${'ab'.repeat(32)}`, logsBloom: `0x${'0'.repeat(512)}` }),
    ),
    new PushPayload(JSON.stringify({ data: `0x${'ff'.repeat(40_000)}`, note: 'ünïcode' })),
  ]
  const ids = [`0x${'1'.repeat(32)}`, `0x${'2f'.repeat(16)}`, `0x${'3'.repeat(32)}`]
  const subscribers: { socket: Duplex; id: Buffer }[] = []

  beforeAll(async () => {
    wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false })
    await new Promise((r) => wss.once('listening', r))
    url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`
    // Each client names its subscription id; once all have, every payload is fanned out to all,
    // with the middle client's socket corked so that its frames wait in the stream's queue.
    wss.on('connection', (ws, req) => {
      ws.once('message', (id) => {
        subscribers.push({ socket: req.socket, id: subscriptionIdBytes(id.toString()) })
        if (subscribers.length < ids.length) return
        const corked = subscribers[1]!.socket
        corked.cork()
        for (const p of payloads) for (const s of subscribers) p.writeTo(s.socket, s.id)
        expect(corked.writableLength).toBeGreaterThan(0)
        corked.uncork()
      })
    })
  })

  afterAll(() => new Promise((r) => wss.close(r)))

  function receive(id: string): Promise<unknown[]> {
    const ws = new WebSocket(url)
    const got: unknown[] = []
    return new Promise((resolve, reject) => {
      ws.on('open', () => ws.send(id))
      ws.on('message', (data, isBinary) => {
        expect(isBinary).toBe(false)
        got.push(JSON.parse(data.toString()))
        if (got.length < payloads.length) return
        ws.terminate()
        resolve(got)
      })
      ws.on('error', reject)
    })
  }

  it('carries each subscriber its own id and the shared result, at every frame size', async () => {
    const received = await Promise.all(ids.map((id) => receive(id)))
    for (const [i, id] of ids.entries()) {
      expect(received[i]).toEqual(
        payloads.map((p) => ({
          jsonrpc: '2.0',
          method: 'eth_subscription',
          params: { subscription: id, result: JSON.parse(p.json) },
        })),
      )
    }
    expect(payloads[0]!.bytes).toBeLessThan(126)
    expect(payloads[2]!.bytes).toBeGreaterThan(0xffff)
  })

  it('accepts only ids of the fixed length', () => {
    expect(subscriptionIdBytes(`0x${'a'.repeat(32)}`).length).toBe(SUBSCRIPTION_ID_LENGTH)
    expect(() => subscriptionIdBytes('0x1234')).toThrow(/subscription ids/)
    expect(() => subscriptionIdBytes(`0x${'A'.repeat(32)}`)).toThrow(/subscription ids/)
  })
})
