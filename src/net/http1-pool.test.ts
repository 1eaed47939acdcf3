import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import {
  type AddressInfo,
  connect as connectTcp,
  createServer as createTcpServer,
  type Socket,
} from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { selfSignedCert } from '../../test/fixtures/net/test-cert.ts'
import { until } from '../../test/helpers/until.ts'
import { Http1Error, Http1Pool, type Http1Pool as Pool } from './http1-pool.ts'

interface Answer {
  status: number
  body: string
}

/** One POST of `body`; `abortAfterMs` gives it up through the handler's abort. */
function post(pool: Pool, url: URL, body: string, abortAfterMs?: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    pool.send(
      `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      {
        onStart(abort) {
          if (abortAfterMs !== undefined) setTimeout(() => abort(new Error('given up')), abortAfterMs)
        },
        onAnswer: (status, b) => resolve({ status, body: b.toString() }),
        onError: reject,
      },
    )
  })
}

const OPTS = { connections: 4, keepAliveMs: 30_000, connectTimeoutMs: 2_000 }
const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

/** A real HTTP server on 127.0.0.1 with `handler`; the sockets it accepted are counted. */
async function serve(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  server: Server = createServer(),
): Promise<{ url: URL; sockets: Set<Socket>; server: Server }> {
  const sockets = new Set<Socket>()
  server.on('request', handler)
  server.on('connection', (s: Socket) => sockets.add(s))
  server.on('secureConnection', (s: Socket) => sockets.add(s))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  cleanups.push(() => new Promise((r) => server.close(r)))
  cleanups.push(() => server.closeAllConnections())
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/rpc`), sockets, server }
}

/** Echoes the request's body, so each answer can be matched to its call. */
const echo = (req: IncomingMessage, res: ServerResponse) => {
  let body = ''
  req.on('data', (c) => {
    body += c
  })
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(body)
  })
}

function pool(url: URL, opts: Partial<ConstructorParameters<typeof Http1Pool>[1]> = {}) {
  const p = new Http1Pool(url, { ...OPTS, ...opts })
  cleanups.push(() => p.close())
  return p
}

describe('Http1Pool', () => {
  it('answers many concurrent calls, each with its own answer, over at most `connections` sockets', async () => {
    const { url, sockets } = await serve(echo)
    const p = pool(url)
    const bodies = Array.from({ length: 200 }, (_, i) => `{"id":${i},"pad":"${'x'.repeat(i * 50)}"}`)
    const answers = await Promise.all(bodies.map((b) => post(p, url, b)))
    expect(answers.map((a) => a.body)).toEqual(bodies)
    expect(answers.every((a) => a.status === 200)).toBe(true)
    expect(sockets.size).toBeLessThanOrEqual(4)
    // Kept alive: a later call reuses a socket.
    await post(p, url, '{}')
    expect(sockets.size).toBeLessThanOrEqual(4)
  })

  it('reads a chunked answer written in pieces', async () => {
    const { url } = await serve((req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeHead(200)
        res.write('{"result":')
        setTimeout(() => res.end('"0x1"}'), 20)
      })
    })
    const p = pool(url)
    expect(await post(p, url, '{}')).toEqual({ status: 200, body: '{"result":"0x1"}' })
    expect(await post(p, url, '{}')).toEqual({ status: 200, body: '{"result":"0x1"}' })
  })

  it('speaks HTTPS', async () => {
    const { key, cert } = selfSignedCert()
    const server = createHttpsServer({ key, cert })
    const { url } = await serve(echo, server)
    const https = new URL(url.href.replace('http:', 'https:'))
    const p = pool(https, { tls: { ca: cert } })
    expect(await post(p, https, '{"over":"tls"}')).toEqual({ status: 200, body: '{"over":"tls"}' })
    // Without the certificate's authority the handshake fails, as a call error.
    const untrusted = pool(https)
    await expect(post(untrusted, https, '{}')).rejects.toThrow(/self.signed|certificate/i)
  })

  it('opens a new socket when the node closed an idle one', async () => {
    const { url, server } = await serve(echo)
    ;(server as Server).keepAliveTimeout = 50
    const p = pool(url)
    expect((await post(p, url, '{"n":1}')).body).toBe('{"n":1}')
    await new Promise((r) => setTimeout(r, 300))
    expect((await post(p, url, '{"n":2}')).body).toBe('{"n":2}')
  })

  it('sends a call to a new socket when the node closed the idle one just as the call took it', async () => {
    // The race a keep-alive client must survive: in one turn of the event loop, a call takes the
    // idle socket and then the node's FIN on it is read. Both reach the kernel here before the
    // loop polls again, the trigger (a byte on another connection, whose callback sends the
    // call) first; epoll reports them in that order. The request was not yet written (that
    // waits for the check phase), so it goes to a new socket instead of failing.
    const accepted: Socket[] = []
    const raw = createTcpServer((s) => {
      accepted.push(s)
      s.on('data', () => s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'))
    })
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => raw.close(r)))
    const url = new URL(`http://127.0.0.1:${(raw.address() as AddressInfo).port}/`)
    const p = pool(url)
    expect(await post(p, url, '{}')).toEqual({ status: 200, body: 'ok' })
    expect(accepted).toHaveLength(1)

    let triggerSide: Socket | undefined
    const trigger = createTcpServer((s) => {
      triggerSide = s
    })
    await new Promise<void>((r) => trigger.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => trigger.close(r)))
    const client = connectTcp((trigger.address() as AddressInfo).port, '127.0.0.1')
    cleanups.push(() => client.destroy())
    await new Promise<void>((r) => client.once('connect', r))
    await until('the trigger connection accepted', () => triggerSide !== undefined)
    const second = new Promise<Answer>((resolve, reject) =>
      client.once('data', () => post(p, url, '{}').then(resolve, reject)),
    )
    triggerSide?.write('go')
    accepted[0]?.destroy()
    expect(await second).toEqual({ status: 200, body: 'ok' })
    expect(accepted).toHaveLength(2)
  })

  it("does not reuse a socket past the node's own Keep-Alive timeout", async () => {
    const { url, sockets, server } = await serve(echo)
    // Node then answers `Keep-Alive: timeout=1`: less Halyard's one-second margin, nothing is left.
    ;(server as Server).keepAliveTimeout = 1_000
    const p = pool(url)
    await post(p, url, '{"n":1}')
    await new Promise((r) => setTimeout(r, 20))
    await post(p, url, '{"n":2}')
    expect(sockets.size).toBe(2)
    // Node's default (`timeout=5`) leaves four seconds: the same socket carries the next call.
    const other = await serve(echo)
    const q = pool(other.url)
    await post(q, other.url, '{"n":1}')
    await new Promise((r) => setTimeout(r, 20))
    await post(q, other.url, '{"n":2}')
    expect(other.sockets.size).toBe(1)
  })

  it('fails a call to a port nobody listens on with the socket error', async () => {
    const { url, server } = await serve(echo)
    await new Promise((r) => server.close(r))
    const err = await post(pool(url), url, '{}').catch((e: unknown) => e)
    expect((err as { code?: string }).code).toBe('ECONNREFUSED')
  })

  it('fails a call whose answer is not HTTP, and serves the next on a new socket', async () => {
    let calls = 0
    const raw = createTcpServer((s) => {
      s.once('data', () => {
        calls++
        s.end(calls === 1 ? 'nonsense\r\n\r\n' : 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok')
      })
    })
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => raw.close(r)))
    const url = new URL(`http://127.0.0.1:${(raw.address() as AddressInfo).port}/`)
    const p = pool(url)
    const err = await post(p, url, '{}').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(Http1Error)
    expect((err as Http1Error).code).toBe('HPE_INVALID')
    expect(await post(p, url, '{}')).toEqual({ status: 200, body: 'ok' })
  })

  it('fails a call the node cut short', async () => {
    const raw = createTcpServer((s) => {
      s.once('data', () => s.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort'))
    })
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => raw.close(r)))
    const url = new URL(`http://127.0.0.1:${(raw.address() as AddressInfo).port}/`)
    const err = await post(pool(url), url, '{}').catch((e: unknown) => e)
    expect((err as Http1Error).code).toBe('ECONNRESET')
  })

  it('gives up a call on its socket and one still waiting for a socket, and serves the next', async () => {
    let hang = true
    const open: ServerResponse[] = []
    const { url, sockets } = await serve((req, res) => {
      req.resume()
      if (hang) open.push(res)
      else req.on('end', () => res.end('late'))
    })
    cleanups.push(() => {
      for (const r of open) r.destroy()
    })
    const p = pool(url, { connections: 1 })
    const onSocket = post(p, url, '{"a":1}', 100).catch((e: Error) => e.message)
    const waiting = post(p, url, '{"a":2}', 50).catch((e: Error) => e.message)
    expect(await waiting).toBe('given up')
    expect(await onSocket).toBe('given up')
    hang = false
    expect(await post(p, url, '{}')).toEqual({ status: 200, body: 'late' })
    // The abandoned socket was closed, not reused mid-answer.
    expect([...sockets].filter((s) => !s.destroyed).length).toBe(1)
  })

  it('closes: lets a call on a socket finish, fails waiting and new ones', async () => {
    const { url } = await serve((req, res) => {
      req.resume()
      req.on('end', () => setTimeout(() => res.end('done'), 50))
    })
    const p = new Http1Pool(url, { ...OPTS, connections: 1 })
    const first = post(p, url, '{}')
    const waiting = post(p, url, '{}').catch((e: Http1Error) => e.code)
    const closed = p.close()
    expect(await waiting).toBe('ECLOSED')
    expect(await first).toEqual({ status: 200, body: 'done' })
    await closed
    expect(await post(p, url, '{}').catch((e: Http1Error) => e.code)).toBe('ECLOSED')
  })

  it('closes after some waiting calls were served: the one on the socket finishes, the rest fail', async () => {
    const { url } = await serve((req, res) => {
      req.resume()
      req.on('end', () => setTimeout(() => res.end('done'), 50))
    })
    const p = new Http1Pool(url, { ...OPTS, connections: 1 })
    const [a, b] = [post(p, url, '{}'), post(p, url, '{}')]
    const c = post(p, url, '{}').catch((e: Http1Error) => e.code)
    // `a` is answered at ≈ 50 ms and `b` takes its socket; then the pool closes.
    expect(await a).toEqual({ status: 200, body: 'done' })
    const closed = p.close()
    expect(await c).toBe('ECLOSED')
    expect(await b).toEqual({ status: 200, body: 'done' })
    await closed
  })
})
