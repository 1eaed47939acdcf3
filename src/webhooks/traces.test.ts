import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork } from '../../test/helpers/halyard.ts'
import { NetworkRegistry } from '../chains/registry.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { TraceReader } from './traces.ts'

/**
 * Which nodes can serve internal_transfer webhooks. anvil answers both trace methods. A node
 * without tracing cannot run here, so it is a small relay in front of the same anvil that
 * answers debug_* and trace_* with "method not found" (as geth without the debug namespace,
 * or a provider that does not sell traces, does) and passes everything else through.
 */
describe('trace support', () => {
  let anvil: AnvilProcess
  let relay: http.Server
  let networks: NetworkRegistry

  beforeAll(async () => {
    anvil = await startAnvil()
    relay = http.createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', async () => {
        const body = Buffer.concat(chunks).toString('utf8')
        const call = JSON.parse(body) as { id: unknown; method: string }
        if (/^(debug|trace)_/.test(call.method)) {
          res.writeHead(200, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              jsonrpc: '2.0',
              id: call.id,
              error: { code: -32601, message: 'Method not found' },
            }),
          )
          return
        }
        const up = await fetch(anvil.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        })
        res.writeHead(up.status, { 'content-type': 'application/json' }).end(await up.text())
      })
    })
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r))
    const port = (relay.address() as AddressInfo).port
    networks = new NetworkRegistry([
      anvilNetwork(anvil),
      anvilNetwork(anvil, { network: 'notrace', upstreams: [{ url: `http://127.0.0.1:${port}` }] }),
    ])
  })
  afterAll(async () => {
    await new Promise((r) => relay?.close(r))
    await anvil?.stop()
  })

  it('accepts a node that traces and refuses one that answers neither method', async () => {
    const traces = new TraceReader(networks)
    expect(await traces.supported('ethereum-devnet')).toBe(true)
    expect(await traces.supported('ethereum-notrace')).toBe(false)
    // At match time a node that stopped tracing yields no internal transfers instead of throwing.
    expect(await traces.internalTransfers('ethereum-notrace', 0n, [])).toEqual([])
  })
})
