import type http from 'node:http'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { anvilNetwork } from '../../test/helpers/halyard.ts'
import { type RelayedCall, rpcRelay } from '../../test/helpers/rpc-relay.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { listen } from '../../test/helpers/trace-relay.ts'
import { NetworkRegistry } from '../chains/registry.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { Devnet } from '../devnet/demo.ts'
import { createLogger } from '../logger.ts'
import type { Storage } from '../storage/database.ts'
import { IndexerService } from './service.ts'

/** The relay refuses eth_getLogs over more blocks than this, with Infura's words. */
const K = 7n
/** The budgeted network's limits. */
const PER_SECOND = 40
const AT_ONCE = 3
const BLOCKS = 120

const hexOf = (n: bigint) => `0x${n.toString(16)}`

/**
 * The follower's requests to a provider, on anvil behind relays that play one: `ranged`
 * refuses eth_getLogs over K blocks as Infura does (naming the range that works), and the next
 * request must be that range; `budgeted` counts requests in flight and started per second
 * while the indexer backfills many blocks under a small `indexer.requestsPerSecond` and
 * `indexer.maxConcurrency`, and neither may ever exceed the budget.
 */
describeEachStorage('upstream requests on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: Storage
  let networks: NetworkRegistry
  let dev: Devnet
  let indexer: IndexerService
  let ranged: http.Server
  let budgeted: http.Server
  /** eth_getLogs ranges the ranged relay saw, in order, and whether each was refused. */
  const logRanges: { from: bigint; to: bigint; refused: boolean }[] = []
  /** Arrival times (ms) at the budgeted relay, and the most requests in flight there. */
  const starts: number[] = []
  let inFlight = 0
  let mostInFlight = 0

  beforeAll(async () => {
    anvil = await startAnvil()
    dev = new Devnet(anvil.url)
    // Mined before the indexer starts, far more than the head path's gap: backfill reads them.
    await dev.rpc('anvil_mine', [hexOf(BigInt(BLOCKS))])
    ranged = rpcRelay(anvil.url, {
      refuse: (call: RelayedCall) => {
        if (call.method !== 'eth_getLogs') return undefined
        const f = call.params[0] as { fromBlock?: string; toBlock?: string }
        if (f.fromBlock === undefined || f.toBlock === undefined) return undefined
        const from = BigInt(f.fromBlock)
        const to = BigInt(f.toBlock)
        const refused = to - from + 1n > K
        logRanges.push({ from, to, refused })
        if (!refused) return undefined
        return {
          code: -32005,
          message: `query returned more than 10000 results. Try with this block range [${hexOf(from)}, ${hexOf(from + K - 1n)}].`,
        }
      },
    })
    // The pool's own health check (eth_chainId beside eth_blockNumber, health-check.ts) is not
    // the indexer's and not in its budget; the follower on a devnet sends neither.
    const counted = (c: RelayedCall) => c.method !== 'eth_chainId' && c.method !== 'eth_blockNumber'
    budgeted = rpcRelay(anvil.url, {
      onStart: (c) => {
        if (!counted(c)) return
        starts.push(performance.now())
        inFlight++
        mostInFlight = Math.max(mostInFlight, inFlight)
      },
      onEnd: (c) => {
        if (counted(c)) inFlight--
      },
    })
    networks = new NetworkRegistry([
      anvilNetwork(anvil, {
        network: 'ranged',
        upstreams: [{ url: await listen(ranged) }],
        indexer: { enabled: true, maxBlockRange: 2000, internalTransfers: 'off' },
      }),
      anvilNetwork(anvil, {
        network: 'budgeted',
        upstreams: [{ url: await listen(budgeted) }],
        indexer: {
          enabled: true,
          maxBlockRange: 2000,
          internalTransfers: 'off',
          requestsPerSecond: PER_SECOND,
          maxConcurrency: AT_ONCE,
        },
      }),
    ])
    storage = await backend.open()
    indexer = new IndexerService({ storage, networks, logger: createLogger('silent') })
    indexer.start()
  })
  afterAll(async () => {
    await indexer?.stop()
    await networks?.close()
    await storage?.close()
    await new Promise((r) => ranged?.close(r))
    await new Promise((r) => budgeted?.close(r))
    await anvil?.stop()
  })

  it('a refused eth_getLogs range is followed by the range the refusal names', async () => {
    await indexer.waitForBlock('ethereum-ranged', BigInt(BLOCKS), 60_000)
    const first = logRanges.findIndex((r) => r.refused)
    expect(first).toBeGreaterThanOrEqual(0)
    const refused = logRanges[first] as (typeof logRanges)[number]
    expect(logRanges[first + 1]).toEqual({ from: refused.from, to: refused.from + K - 1n, refused: false })
    // The named width holds from then on: no range is refused again.
    expect(logRanges.slice(first + 1).filter((r) => r.refused)).toEqual([])
  })

  it('a backfill of many blocks never exceeds the request budget', async () => {
    await indexer.waitForBlock('ethereum-budgeted', BigInt(BLOCKS), 60_000)
    // Blocks, receipts and logs for BLOCKS blocks: several seconds' worth of the budget.
    expect(starts.length).toBeGreaterThan(2 * PER_SECOND)
    expect(mostInFlight).toBeLessThanOrEqual(AT_ONCE)
    // Counted at the relay, a request arrives some time after the budget let it start (on a
    // loaded machine, by hundreds of ms), so arrivals in a second are the starts the budget let
    // through in that second (at most PER_SECOND) plus requests started before it and still on
    // their way when it began — those were in flight, so at most AT_ONCE. No timing assumption.
    let most = 0
    for (let i = 0, j = 0; i < starts.length; i++) {
      while ((starts[i] as number) - (starts[j] as number) >= 1000) j++
      most = Math.max(most, i - j + 1)
    }
    expect(most).toBeLessThanOrEqual(PER_SECOND + AT_ONCE)
  })
})
