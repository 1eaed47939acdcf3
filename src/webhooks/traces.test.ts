import type http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork } from '../../test/helpers/halyard.ts'
import { listen, traceRelay } from '../../test/helpers/trace-relay.ts'
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
    relay = traceRelay(anvil.url, () => true)
    const url = await listen(relay)
    networks = new NetworkRegistry([
      anvilNetwork(anvil),
      anvilNetwork(anvil, { network: 'notrace', upstreams: [{ url }] }),
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
