import http from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A JSON-RPC relay to `upstream` that answers the debug_* and trace_* calls `refuse` picks with
 * "method not found", as a node without tracing does; everything else goes through.
 */
export function traceRelay(upstream: string, refuse: (method: string) => boolean): http.Server {
  return http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const call = JSON.parse(body) as { id: unknown; method: string }
      if (/^(debug|trace)_/.test(call.method) && refuse(call.method)) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: call.id,
            error: { code: -32601, message: 'Method not found' },
          }),
        )
        return
      }
      const up = await fetch(upstream, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      res.writeHead(up.status, { 'content-type': 'application/json' }).end(await up.text())
    })
  })
}

/** Listens on a free loopback port; resolves to the server's base URL. */
export async function listen(s: http.Server): Promise<string> {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`
}
