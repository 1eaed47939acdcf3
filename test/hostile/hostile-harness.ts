import http from 'node:http'
import net from 'node:net'
import { ERROR_STATUS } from '../../src/errors.ts'
import { HANG_MS, type Req } from './hostile-request.ts'

/**
 * The sweep's harness: the raw sender, the checks every answer must pass, and the route groups
 * (hostile-cases.ts holds the battery, hostile-input.test.ts runs it).
 */
export interface Answer {
  status: number
  contentType: string
  text: string
}

export function send(origin: URL, req: Req): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let answered = false
    const timer = setTimeout(() => {
      r.destroy()
      reject(new Error(`HANG: no answer within ${HANG_MS} ms`))
    }, HANG_MS)
    const r = http.request(
      {
        host: origin.hostname,
        port: origin.port,
        method: req.method,
        path: req.path,
        // Explicit framing: node would otherwise send a GET's body unframed (a second "request").
        headers: {
          ...req.headers,
          connection: 'close',
          ...(req.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(req.body)) }),
        },
        agent: false,
        insecureHTTPParser: false,
      },
      (res) => {
        answered = true
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          clearTimeout(timer)
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            text: Buffer.concat(chunks).toString('utf8'),
          })
        })
        res.on('error', (err) => {
          clearTimeout(timer)
          reject(err)
        })
      },
    )
    r.on('error', (err) => {
      // The server may answer (e.g. "body too large") and close before it has read all we send.
      if (answered) return
      clearTimeout(timer)
      reject(err)
    })
    if (req.body !== undefined) r.end(req.body)
    else r.end()
  })
}

/** An answer read off a raw socket: the head's headers too (names lowercased). */
export interface RawAnswer extends Answer {
  headers: Record<string, string>
}

/**
 * Writes `text` on a fresh TCP connection as it is (no HTTP client tidies it up) and reads
 * until the server closes. A connection closed without an answer is status 0; one left open
 * past HANG_MS is a hang.
 */
export function sendRaw(origin: URL, text: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(origin.port), origin.hostname)
    const chunks: Buffer[] = []
    const timer = setTimeout(() => {
      s.destroy()
      reject(new Error(`HANG: no answer within ${HANG_MS} ms`))
    }, HANG_MS)
    s.on('data', (c: Buffer) => chunks.push(c))
    s.on('error', () => {})
    s.on('close', () => {
      clearTimeout(timer)
      const all = Buffer.concat(chunks).toString('latin1')
      const [head = '', ...rest] = all.split('\r\n\r\n')
      const headers: Record<string, string> = {}
      for (const line of head.split('\r\n').slice(1)) {
        const i = line.indexOf(':')
        if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
      }
      resolve({
        status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0),
        contentType: headers['content-type'] ?? '',
        text: rest.join('\r\n\r\n'),
        headers,
      })
    })
    s.write(text, 'latin1')
  })
}

/** What is wrong with an answer, or undefined when it honours the contract. */
export function violation(ans: Answer, mention: RegExp | undefined): string | undefined {
  if (ans.status >= 500) return `status ${ans.status} (5xx)`
  if (ans.status < 400) return undefined
  if (!/application\/json/.test(ans.contentType)) return `4xx with content-type "${ans.contentType}"`
  let body: unknown
  try {
    body = JSON.parse(ans.text)
  } catch {
    return '4xx body is not JSON'
  }
  const e = (body as { error?: { code?: unknown; message?: unknown; status?: unknown } }).error
  if (!e || typeof e !== 'object' || Object.keys(body as object).join() !== 'error')
    return '4xx body is not {"error":{...}}'
  if (typeof e.code !== 'string' || !(e.code in ERROR_STATUS)) return `unknown error.code ${String(e.code)}`
  if (ERROR_STATUS[e.code as keyof typeof ERROR_STATUS] !== ans.status)
    return `error.code ${e.code} does not map to HTTP ${ans.status}`
  if (e.status !== ans.status) return `error.status ${String(e.status)} != HTTP ${ans.status}`
  if (typeof e.message !== 'string' || e.message.trim() === '') return 'empty error.message'
  if (mention && !mention.test(e.message)) return `message does not name the problem (want ${mention})`
  return undefined
}

// ---------------------------------------------------------------------------------------------
// Route enumeration from the running app.
// ---------------------------------------------------------------------------------------------

/** Parses `printRoutes({ commonPrefix: false })`: one tree line per path segment group. */
export function routesFromTree(tree: string): { url: string; methods: string[] }[] {
  const out: { url: string; methods: string[] }[] = []
  const stack: string[] = []
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?\s*$/.exec(line)
    if (!m) continue
    const depth = m[1]!.length / 4
    stack.length = depth
    stack.push(m[2]!)
    const methods = (m[3] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s && s !== '-')
    if (methods.length) out.push({ url: stack.join(''), methods })
  }
  return out
}

/** The route groups, one `it` each; every route the app serves must fall into exactly one. */
export const GROUPS: ReadonlyArray<readonly [name: string, match: (url: string) => boolean]> = [
  ['ops (/health, /ready, /metrics)', (u) => ['/health', '/ready', '/metrics'].includes(u)],
  ['admin API (/admin)', (u) => u.startsWith('/admin/')],
  [
    'JSON-RPC (/v1/rpc, /v1/paymaster, /v1/bundler)',
    (u) => u.startsWith('/v1/rpc/') || u.startsWith('/v1/paymaster/') || u.startsWith('/v1/bundler/'),
  ],
  ['WebSocket (plain GET /v1/ws)', (u) => u.startsWith('/v1/ws/')],
  ['tokens (/v1/tokens)', (u) => u.startsWith('/v1/tokens/')],
  ['NFTs (/v1/nfts)', (u) => u.startsWith('/v1/nfts/')],
  ['transfers (/v1/transfers)', (u) => u.startsWith('/v1/transfers/')],
  ['Alchemy-compatible root (/v1/alchemy)', (u) => u.startsWith('/v1/alchemy/')],
  ['gas (/v1/gas)', (u) => u.startsWith('/v1/gas/')],
  ['wallets (/v1/wallets)', (u) => u === '/v1/wallets' || u.startsWith('/v1/wallets/')],
  ['webhooks (/v1/webhooks)', (u) => u === '/v1/webhooks' || u.startsWith('/v1/webhooks/')],
  [
    'usage, recorded requests, OpenAPI and OpenRPC (/v1/usage, /v1/requests, /v1/openapi.json, /v1/openrpc.json)',
    (u) => ['/v1/usage', '/v1/requests', '/v1/openapi.json', '/v1/openrpc.json'].includes(u),
  ],
  ['dashboard (/dashboard)', (u) => u === '/dashboard' || u.startsWith('/dashboard/')],
]
