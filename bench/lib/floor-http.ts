/**
 * The floors for bench:rpc: the least a Node process can do to answer a JSON-RPC POST.
 * - constant: reads the body and writes one constant answer: no parsing, no auth, no limits,
 *   no upstream. Halyard's cached rows are read against it.
 * - proxy (`proxyTo`): reads the body and forwards its bytes to the upstream over an undici
 *   keep-alive pool, then writes the upstream's bytes back: no parsing, no auth, no limits.
 *   The least any Node gateway pays per uncached call; Halyard's uncached rows are read
 *   against it beside nginx.
 * - reading (`readingProxy`): the proxy, plus parsing the call and putting the client's id back:
 *   what reading a call costs in Node before any of a gateway's features; reading-constant
 *   (`readingConstant`) reads the call the same way and answers a constant under its id.
 * - headers-constant (`headersConstant`): the reading constant server, answering with the
 *   headers the API promises on every answer (rate limits, request id).
 * - constant-turn, headers-constant-turn and proxy-turn: the bare constant, the headers constant
 *   and the bare proxy with their answers written at the end of the turn, as Halyard's lane
 *   writes them (`atEndOfTurn`).
 * - coalescing (`coalescingProxy`): the reading proxy joining identical calls in flight, answering
 *   with the API's headers: what Node allows on the identical (coalescing) row.
 *   (The floors that read the call live in floor-reading.ts.)
 * - socket-proxy (`socketProxy`): the bare proxy with a hand-written HTTP/1.1 client on plain
 *   sockets instead of undici: how much of the bare proxy's cost is its HTTP client.
 * With N > 1 it runs N processes behind node:cluster on one port, like `HALYARD_WORKERS`.
 *
 * Started by `startFloor` (a forked child, so it never shares the load generator's loop).
 */
import { type ChildProcess, fork } from 'node:child_process'
import cluster from 'node:cluster'
import { createServer, type ServerResponse } from 'node:http'
import { connect, type Socket } from 'node:net'
import { type Dispatcher, Pool } from 'undici'
import { benchNodeArgs, childCommand } from './built-child.ts'
import {
  atEndOfTurn,
  coalescingProxy,
  type Handler,
  headersConstant,
  readingConstant,
  readingProxy,
} from './floor-reading.ts'

export { READING_FLOOR_KEY } from './floor-reading.ts'

const ANSWER = Buffer.from('{"jsonrpc":"2.0","id":1,"result":"0x7a69"}')
const HEADERS = { 'content-type': 'application/json', 'content-length': String(ANSWER.length) }

const sendConstant = (res: ServerResponse) => {
  res.writeHead(200, HEADERS)
  res.end(ANSWER)
}

/** Reads the body and answers the constant, at once or (`atEndOfTurn`) at the end of the turn. */
function constantServer(send: (res: ServerResponse) => void): Handler {
  return (req, res) => {
    req.on('data', () => {})
    req.on('end', () => send(res))
  }
}

/**
 * Forwards the body's bytes with `Pool.dispatch` and a handler that collects the answer's
 * chunks: the leanest undici path (no response stream, no promise per step), so the floor is not
 * a slow client. With `endOfTurn`, the answers are written as Halyard's lane writes them
 * (`atEndOfTurn`).
 */
function proxy(upstream: string, endOfTurn = false): Handler {
  const pool = new Pool(upstream, { connections: 128, keepAliveTimeout: 30_000 })
  const headers = { 'content-type': 'application/json' }
  const writeNow = (res: ServerResponse, status: number, body: Buffer) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length })
    res.end(body)
  }
  const write = endOfTurn ? atEndOfTurn(writeNow) : writeNow
  return (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const answer: Buffer[] = []
      let status = 502
      const handler: Dispatcher.DispatchHandler = {
        // undici tells the new handler shape from the old by this method.
        onRequestStart: () => {},
        onResponseStart: (_c, statusCode) => {
          status = statusCode
        },
        onResponseData: (_c, chunk: Buffer) => {
          answer.push(chunk)
        },
        onResponseEnd: () => write(res, status, answer.length === 1 ? answer[0]! : Buffer.concat(answer)),
        onResponseError: () => {
          res.writeHead(502)
          res.end()
        },
      }
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
      pool.dispatch({ path: '/', method: 'POST', headers, body }, handler)
    })
  }
}

/**
 * The socket proxy: the bare proxy's work, with undici replaced by the least HTTP/1.1 client that
 * can talk to a JSON-RPC node over keep-alive: plain sockets, one call per socket at a time, the
 * request written in one piece, the answer framed by its Content-Length alone. Not a client to
 * ship (no chunked answers, no TLS, no deadlines, no retries): it tells what the bare proxy's own
 * HTTP client costs, and so how far below the bare proxy a leaner client could take a gateway.
 */
function socketProxy(upstream: string): Handler {
  const u = new URL(upstream)
  const idle: UpstreamSocket[] = []
  const open = () => new UpstreamSocket(Number(u.port || 80), u.hostname, idle)
  const head = `POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: `
  return (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
      ;(idle.pop() ?? open()).send(`${head}${body.length}\r\n\r\n`, body, res)
    })
  }
}

const HEAD_END = Buffer.from('\r\n\r\n')

class UpstreamSocket {
  private readonly socket: Socket
  private res: ServerResponse | undefined
  private buf: Buffer | undefined

  constructor(
    port: number,
    host: string,
    private readonly idle: UpstreamSocket[],
  ) {
    this.socket = connect(port, host)
    this.socket.setNoDelay(true)
    this.socket.on('data', (c: Buffer) => this.onData(c))
    this.socket.on('error', () => this.fail())
    this.socket.on('close', () => this.fail())
  }

  send(head: string, body: Buffer, res: ServerResponse): void {
    this.res = res
    this.socket.cork()
    this.socket.write(head)
    this.socket.write(body)
    this.socket.uncork()
  }

  private onData(chunk: Buffer): void {
    const buf = this.buf ? Buffer.concat([this.buf, chunk]) : chunk
    const end = buf.indexOf(HEAD_END)
    if (end < 0) {
      this.buf = buf
      return
    }
    const headText = buf.toString('latin1', 0, end).toLowerCase()
    const at = headText.indexOf('content-length:')
    const length = at < 0 ? Number.NaN : Number.parseInt(headText.slice(at + 15), 10)
    if (!(length >= 0)) {
      this.socket.destroy()
      return
    }
    if (buf.length < end + 4 + length) {
      this.buf = buf
      return
    }
    this.buf = undefined
    const res = this.res
    this.res = undefined
    this.idle.push(this)
    if (!res) return
    const body = buf.subarray(end + 4, end + 4 + length)
    res.writeHead(Number(headText.slice(9, 12)), {
      'content-type': 'application/json',
      'content-length': body.length,
    })
    res.end(body)
  }

  private fail(): void {
    const i = this.idle.indexOf(this)
    if (i >= 0) this.idle.splice(i, 1)
    const res = this.res
    this.res = undefined
    if (res && !res.headersSent) {
      res.writeHead(502)
      res.end()
    }
  }
}

function listen(handler: Handler): Promise<number> {
  const server = createServer(handler)
  server.keepAliveTimeout = 30_000
  return new Promise((resolve) => {
    // Port 0 in cluster workers: the primary hands every worker the same port.
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port))
  })
}

/**
 * What a floor server does: answer a constant, forward bytes, or read the call and then answer a
 * constant (`reading-constant`, or `headers-constant` with the API's headers) or forward it
 * (`reading`, or `coalescing`: identical calls in flight share one forward).
 */
export type FloorKind =
  | 'constant'
  | 'proxy'
  | 'reading'
  | 'reading-constant'
  | 'headers-constant'
  | 'socket-proxy'
  | 'coalescing'
  | 'constant-turn'
  | 'headers-constant-turn'
  | 'proxy-turn'

function handlerOf(kind: FloorKind, upstream: string | undefined): Handler {
  if (kind === 'reading-constant') return readingConstant()
  if (kind === 'headers-constant') return headersConstant()
  if (kind === 'headers-constant-turn') return headersConstant(true)
  if (kind === 'constant-turn') return constantServer(atEndOfTurn(sendConstant))
  if (upstream === undefined || kind === 'constant') return constantServer(sendConstant)
  if (kind === 'socket-proxy') return socketProxy(upstream)
  if (kind === 'coalescing') return coalescingProxy(upstream)
  if (kind === 'proxy-turn') return proxy(upstream, true)
  return kind === 'reading' ? readingProxy(upstream) : proxy(upstream)
}

async function serve(workers: number, kind: FloorKind, upstream: string | undefined): Promise<void> {
  const handler = handlerOf(kind, upstream)
  if (cluster.isWorker) {
    const port = await listen(handler)
    process.send?.({ port })
    return
  }
  let port: number
  if (workers <= 1) {
    port = await listen(handler)
  } else {
    const ports = await Promise.all(
      Array.from(
        { length: workers },
        () => new Promise<number>((r) => cluster.fork().once('message', (m: { port: number }) => r(m.port))),
      ),
    )
    port = ports[0]!
  }
  const stop = () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.kill()
    process.exit(0)
  }
  // Run by hand (profiling: node --cpu-prof --import tsx bench/lib/floor-http.ts --floor 1 proxy URL):
  // print the URL, stop on SIGINT.
  if (process.send) process.send({ url: `http://127.0.0.1:${port}` })
  else console.log(JSON.stringify({ url: `http://127.0.0.1:${port}` }))
  process.once('disconnect', stop)
  process.once('SIGINT', stop)
}

export interface Floor {
  url: string
  /** The floor's process (the cluster primary for N > 1). */
  pid: number | undefined
  stop(): Promise<void>
}

/**
 * Forks the floor server with `workers` processes (a proxy to `proxyTo` if given) and waits until
 * it listens. With `profileDir`, it runs under `--cpu-prof` and writes its profile there on `stop`.
 */
export async function startFloor(
  workers: number,
  proxyTo?: string,
  profileDir?: string,
  kind: FloorKind = proxyTo === undefined ? 'constant' : 'proxy',
): Promise<Floor> {
  const args = ['--floor', String(workers), kind, ...(proxyTo ? [proxyTo] : [])]
  const run = await childCommand(import.meta.filename)
  const profile = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []
  const child: ChildProcess = fork(run.file, args, {
    execArgv: [...run.execArgv, ...profile, ...benchNodeArgs()],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const { url } = await new Promise<{ url: string }>((resolve, reject) => {
    child.once('message', (m) => resolve(m as { url: string }))
    child.once('exit', (code) => reject(new Error(`floor server exited with code ${code}`)))
  })
  return {
    url,
    pid: child.pid,
    async stop() {
      if (child.exitCode !== null) return
      const exited = new Promise((r) => child.once('exit', r))
      child.disconnect()
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3_000))])
      if (child.exitCode === null) child.kill('SIGKILL')
    },
  }
}

if (process.argv[2] === '--floor')
  await serve(Number(process.argv[3] ?? 1), (process.argv[4] ?? 'proxy') as FloorKind, process.argv[5])
