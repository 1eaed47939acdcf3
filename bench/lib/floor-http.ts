/**
 * The floor for bench:rpc: the least a Node process can do to answer a JSON-RPC POST. It reads
 * the body and writes one constant answer: no parsing, no auth, no limits, no upstream. With N
 * > 1 it runs N processes behind node:cluster on one port, like `HALYARD_WORKERS`. Halyard's
 * cached rows are read against it: the gap is Halyard's own cost, the rest is the runtime's.
 *
 * Started by `startFloor` (a forked child, so it never shares the load generator's loop).
 */
import { type ChildProcess, fork } from 'node:child_process'
import cluster from 'node:cluster'
import { createServer } from 'node:http'

const ANSWER = Buffer.from('{"jsonrpc":"2.0","id":1,"result":"0x7a69"}')
const HEADERS = { 'content-type': 'application/json', 'content-length': String(ANSWER.length) }

function listen(): Promise<number> {
  const server = createServer((req, res) => {
    req.on('data', () => {})
    req.on('end', () => {
      res.writeHead(200, HEADERS)
      res.end(ANSWER)
    })
  })
  server.keepAliveTimeout = 30_000
  return new Promise((resolve) => {
    // Port 0 in cluster workers: the primary hands every worker the same port.
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port))
  })
}

async function serve(workers: number): Promise<void> {
  if (cluster.isWorker) {
    const port = await listen()
    process.send?.({ port })
    return
  }
  let port: number
  if (workers <= 1) {
    port = await listen()
  } else {
    const ports = await Promise.all(
      Array.from(
        { length: workers },
        () => new Promise<number>((r) => cluster.fork().once('message', (m: { port: number }) => r(m.port))),
      ),
    )
    port = ports[0]!
  }
  process.send?.({ url: `http://127.0.0.1:${port}` })
  process.once('disconnect', () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.kill()
    process.exit(0)
  })
}

export interface Floor {
  url: string
  /** The floor's process (the cluster primary for N > 1). */
  pid: number | undefined
  stop(): Promise<void>
}

/** Forks the floor server with `workers` processes and waits until it listens. */
export async function startFloor(workers: number): Promise<Floor> {
  const child: ChildProcess = fork(import.meta.filename, ['--floor', String(workers)], {
    execArgv: ['--import', 'tsx'],
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

if (process.argv[2] === '--floor') await serve(Number(process.argv[3] ?? 1))
