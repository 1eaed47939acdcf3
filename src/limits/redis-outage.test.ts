import { type AddressInfo, connect, createServer, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { withinDeadline } from './redis-outage.ts'

const cleanups: (() => void)[] = []
afterEach(() => {
  for (const c of cleanups.splice(0)) c()
})

/** A connected loopback socket pair: what `server` writes is in `client`'s kernel buffer at once. */
async function socketPair(): Promise<{ client: Socket; server: Socket }> {
  let server: Socket | undefined
  const srv = createServer((s) => {
    server = s
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  const client = connect((srv.address() as AddressInfo).port, '127.0.0.1')
  await new Promise<void>((r) => client.once('connect', r))
  while (server === undefined) await new Promise((r) => setImmediate(r))
  const s = server
  cleanups.push(() => {
    client.destroy()
    s.destroy()
    srv.close()
  })
  return { client, server: s }
}

const stall = (ms: number) => {
  const end = performance.now() + ms
  while (performance.now() < end) {}
}

describe('withinDeadline', () => {
  it('takes an answer that arrived while the process was stalled past the deadline', async () => {
    const { client, server } = await socketPair()
    const answer = new Promise<string>((resolve) => client.once('data', (b: Buffer) => resolve(b.toString())))
    const judged = withinDeadline(answer, 20)
    // The answer reaches the socket at once; the process then stalls past the deadline, so the
    // timer is due before the poll phase that reads the answer.
    server.write('OK')
    stall(100)
    await expect(judged).resolves.toBe('OK')
  })

  it('rejects when nothing arrived by the deadline, and passes a rejection through', async () => {
    await expect(withinDeadline(new Promise<never>(() => {}), 20)).rejects.toThrow(
      'redis did not answer within 20 ms',
    )
    await expect(withinDeadline(Promise.reject(new Error('NOSCRIPT')), 1_000)).rejects.toThrow('NOSCRIPT')
  })
})
