import http from 'node:http'
import https from 'node:https'
import type { AddressInfo, Socket } from 'node:net'

/**
 * A real webhook receiver for tests (HTTP or HTTPS on a chosen loopback address). Each path
 * /wh/NAME behaves as set with `mode(NAME, …)`: `ok` answers 200, `fail` 500, `hang` never
 * answers, `redirect` answers 302 to `location`. Every request is recorded with its raw body
 * and headers, so a test can verify signatures independently.
 */
export type Mode = 'ok' | 'fail' | 'hang' | 'redirect'

export interface Received {
  name: string
  headers: http.IncomingHttpHeaders
  raw: string
  status: number | null
  at: number
  /** The sender's connection closed before the answer (it died or gave up mid-send). */
  aborted?: boolean
}

export class Receiver {
  readonly received: Received[] = []
  private readonly modes = new Map<string, Mode>()
  private readonly sockets = new Set<Socket>()
  private server!: http.Server
  port = 0
  location = 'https://127.0.0.1/'
  /** Delay before answering `ok` (ms): makes deliveries slow enough to interrupt. */
  delayMs = 0

  constructor(
    private readonly host: string,
    private readonly tls?: { key: string; cert: string },
  ) {}

  async start(): Promise<this> {
    const handler: http.RequestListener = (req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const name = (req.url ?? '').replace(/^\/wh\//, '').split('?')[0] ?? ''
        const mode = this.modes.get(name) ?? 'ok'
        const rec: Received = {
          name,
          headers: req.headers,
          raw: Buffer.concat(chunks).toString('utf8'),
          status: null,
          at: Date.now(),
        }
        this.received.push(rec)
        res.on('close', () => {
          if (rec.status === null) rec.aborted = true
        })
        const answer = (status: number, headers: Record<string, string> = {}) => {
          if (rec.aborted) return
          rec.status = status
          res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(status < 300 ? 'ok' : 'no')
        }
        if (mode === 'hang') return
        if (mode === 'fail') return answer(500)
        if (mode === 'redirect') return answer(302, { location: this.location })
        if (this.delayMs > 0) setTimeout(() => answer(200), this.delayMs)
        else answer(200)
      })
    }
    this.server = this.tls ? https.createServer(this.tls, handler) : http.createServer(handler)
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s)
      s.on('close', () => this.sockets.delete(s))
    })
    await new Promise<void>((resolve) => this.server.listen(0, this.host, resolve))
    this.port = (this.server.address() as AddressInfo).port
    return this
  }

  mode(name: string, mode: Mode): void {
    this.modes.set(name, mode)
  }

  /** Acknowledged (2xx) deliveries for a path, parsed. */
  acked(
    name: string,
  ): Array<Received & { body: { id: string; data: Record<string, unknown> } & Record<string, unknown> }> {
    return this.received
      .filter((r) => r.name === name && r.status !== null && r.status < 300)
      .map((r) => ({ ...r, body: JSON.parse(r.raw) }))
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
