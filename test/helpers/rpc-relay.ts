import http from 'node:http'

/** One JSON-RPC call as the relay sees it. */
export interface RelayedCall {
  id: unknown
  method: string
  params: unknown[]
}

export interface RelayHooks {
  /** An error to answer instead of forwarding (as a node refusing the call would), or undefined. */
  refuse?(call: RelayedCall): { code: number; message: string; data?: unknown } | undefined
  /** Every call, when it arrives and when its answer leaves (for counting in flight). */
  onStart?(call: RelayedCall): void
  onEnd?(call: RelayedCall): void
}

/**
 * A JSON-RPC relay to `upstream` that plays a provider: it may refuse calls with the provider's
 * error (`refuse`), and lets a test watch every call. Single calls only (the pool sends no batches).
 * Listen with `listen` (test/helpers/trace-relay.ts).
 */
export function rpcRelay(upstream: string, hooks: RelayHooks): http.Server {
  return http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const call = JSON.parse(body) as RelayedCall
      hooks.onStart?.(call)
      try {
        const error = hooks.refuse?.(call)
        if (error) {
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ jsonrpc: '2.0', id: call.id, error }))
          return
        }
        const up = await fetch(upstream, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        })
        const text = await up.text()
        res.writeHead(up.status, { 'content-type': 'application/json' }).end(text)
      } finally {
        hooks.onEnd?.(call)
      }
    })
  })
}
