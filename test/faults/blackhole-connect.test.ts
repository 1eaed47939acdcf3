import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SafeHttpClient } from '../../src/net/safe-client.ts'
import { safeFetch } from '../../src/net/safe-fetch.ts'
import { until } from '../helpers/until.ts'
import { printFaultTable } from './keyed-load.ts'

/**
 * A webhook receiver whose host swallows SYNs (a black hole), on loopback: a listener with a
 * two-slot accept queue (backlog 1) in a child process that never accepts (its event loop is blocked), the
 * queue filled by two connections of our own. A further connect stays in SYN-SENT. The request
 * must time out at its deadline and its socket be gone by then (plus a second), not linger for
 * the connector's own 300 s timeout.
 */
const DEADLINE_MS = 1_500
/** The promise: the socket is destroyed at the deadline; a second of slack for a busy machine. */
const SOCKET_GONE_BOUND_MS = DEADLINE_MS + 1_000

/** Our connections to `port` still in SYN-SENT, as the kernel sees them (ss from iproute2). */
function synSent(port: number): number {
  const out = execFileSync('ss', ['-Htn', 'state', 'syn-sent', `dst 127.0.0.1:${port}`], { encoding: 'utf8' })
  return out.split('\n').filter((l) => l.trim() !== '').length
}

const skip = (() => {
  try {
    execFileSync('ss', ['-V'], { stdio: 'ignore' })
    return undefined
  } catch {
    return 'skipped: ss (iproute2) not installed'
  }
})()

describe.skipIf(skip !== undefined)(`a black-holed webhook host${skip ? ` (${skip})` : ''}`, () => {
  let child: ChildProcess
  let port = 0
  const fillers: Socket[] = []

  beforeAll(async () => {
    const script = `
      const srv = require('node:net').createServer()
      srv.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
        // Never accept: the loop blocks before it could, the kernel's accept queue fills and
        // later SYNs are dropped. The port goes out first, then the loop is gone for good.
        require('node:fs').writeSync(1, srv.address().port + '\\n')
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)
      })`
    child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    port = await new Promise<number>((resolve) =>
      child.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString()))),
    )
    // Fill the accept queue; these complete the handshake (the kernel's, no accept needed) but
    // are never accepted. Waiting for their handshakes, not a fixed time, keeps a loaded machine
    // from sending the request before the queue is full.
    for (let i = 0; i < 2; i++) {
      const s = connect(port, '127.0.0.1')
      s.on('error', () => {})
      fillers.push(s)
    }
    await Promise.all(fillers.map((s) => new Promise((r) => s.once('connect', r))))
  })
  afterAll(() => {
    for (const s of fillers) s.destroy()
    child?.kill('SIGKILL')
  })

  it('times out at the deadline and leaves no socket in SYN-SENT', async () => {
    const client = new SafeHttpClient({ connectionsPerOrigin: 4 })
    const before = synSent(port)
    const started = Date.now()
    try {
      const res = await safeFetch(`http://127.0.0.1:${port}/wh`, {
        method: 'POST',
        body: '{}',
        timeoutMs: DEADLINE_MS,
        allowLoopback: true,
        client,
      })
      const answeredMs = Date.now() - started
      expect(res.ok).toBe(false)
      expect(!res.ok && res.kind).toBe('timeout')
      const stuck = synSent(port) - before
      const goneAfter = await until('the connect to end', () => synSent(port) <= before, 10_000)
        .then(() => Date.now() - started)
        .catch(() => undefined)
      printFaultTable('Black-holed webhook host (connect never answered)', [
        {
          fault: `connect to a host that drops SYNs, ${DEADLINE_MS} ms deadline`,
          clientVisible: `timeout after ${answeredMs} ms; ${stuck} socket(s) in SYN-SENT then`,
          lost: 'n/a (retried on schedule)',
          duplicated: 'none',
          recovery:
            goneAfter === undefined
              ? 'socket still in SYN-SENT 10 s later'
              : `socket gone ${goneAfter} ms after start`,
        },
      ])
      expect(goneAfter).toBeDefined()
      expect(goneAfter as number).toBeLessThan(SOCKET_GONE_BOUND_MS)
    } finally {
      await client.close()
    }
  })
})
