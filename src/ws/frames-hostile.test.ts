import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { DEV, hostileWsFixture } from '../../test/fixtures/ws/hostile-fixture.ts'
import { exchange, frame, RawWs } from '../../test/fixtures/ws/raw-socket-fixture.ts'
import { DEFAULT_WS_OPTIONS } from './service.ts'

/**
 * The hostile-input rule for WebSocket frames: after a good upgrade, garbage frames get a
 * JSON-RPC error or a close frame with a code, and the server still serves new connections
 * afterwards. Hostile upgrade requests are upgrade-hostile.test.ts. Raw node:net sockets, so
 * every byte on the wire is the test's.
 */

describe('hostile WebSocket frames (PGlite)', () => {
  const fx = hostileWsFixture()
  const { upgrade } = fx

  const open = async (): Promise<RawWs> => {
    const ans = await exchange(fx.port, upgrade(DEV))
    expect(ans.status, ans.text).toBe(101)
    return new RawWs(ans.socket, ans.rest)
  }

  it('answers garbage frames with a JSON-RPC error or a close code, and keeps serving', async () => {
    const { h } = fx
    const max = DEFAULT_WS_OPTIONS.maxPayloadBytes
    expect(h.halyard.services.ws.options.maxPayloadBytes).toBe(max)
    type FrameCase = [name: string, bytes: Buffer, want: 'rpc' | number | 'either']
    const frames: FrameCase[] = [
      ['non-JSON text', frame(0x1, Buffer.from('{not json')), 'rpc'],
      ['binary frame of random bytes', frame(0x2, randomBytes(64)), 'either'],
      ['text over maxPayload (header only)', frame(0x1, Buffer.alloc(0), { claim: max + 1 }), 1009],
      ['text over maxPayload (whole)', frame(0x1, Buffer.alloc(max + 1, 0x61)), 1009],
      ['reserved opcode 0x3', frame(0x3, Buffer.from('x')), 1002],
      ['reserved control opcode 0xB', frame(0xb, Buffer.from('x')), 1002],
      ['unmasked client frame', frame(0x1, Buffer.from('{}'), { mask: false }), 1002],
      ['RSV1 without an extension', frame(0x1, Buffer.from('{}'), { rsv1: true }), 1002],
      ['ping with 126-byte payload', frame(0x9, Buffer.alloc(126)), 1002],
      ['invalid UTF-8 text', frame(0x1, Buffer.from([0xc3, 0x28, 0xff])), 1007],
      ['continuation without a start', frame(0x0, Buffer.from('x')), 1002],
      ['close with code 999', frame(0x8, Buffer.from([0x03, 0xe7])), 1002],
    ]
    const failures: string[] = []
    const seen: string[] = []
    for (const [name, bytes, want] of frames) {
      const c = await open()
      c.socket.write(bytes)
      try {
        const v = await c.verdict()
        const got = v.rpcError
          ? `JSON-RPC error ${v.rpcError.code} ${v.rpcError.message}`
          : `close ${v.closeCode}`
        const ok =
          (want === 'rpc' && v.rpcError !== undefined && v.rpcError.message !== '') ||
          (typeof want === 'number' && v.closeCode === want) ||
          (want === 'either' && (v.rpcError !== undefined || (v.closeCode ?? 0) >= 1000))
        seen.push(`${name}: ${got}`)
        if (!ok) failures.push(`[${name}] want ${want}, got ${got}`)
        // After an error reply the connection is still usable.
        if (v.rpcError && (await c.call('eth_chainId')) !== '0x7a69')
          failures.push(`[${name}] unusable after`)
      } catch (err) {
        failures.push(`[${name}] ${(err as Error).message}`)
      }
      c.socket.destroy()
    }
    console.log(`frame answers:\n  ${seen.join('\n  ')}`)
    expect(failures, `\n${failures.join('\n')}\n`).toEqual([])

    // The server survived all of it: a new connection is served, and so is plain HTTP.
    const after = await open()
    expect(await after.call('eth_chainId')).toBe('0x7a69')
    after.socket.destroy()
    expect((await fetch(`${h.halyard.origin}/health`)).status).toBe(200)
  }, 300_000)
})
