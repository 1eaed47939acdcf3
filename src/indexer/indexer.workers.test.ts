import type http from 'node:http'
import { toHex } from 'viem'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { apiSnapshot } from '../../test/fixtures/indexer/api-snapshot.ts'
import { anvilNetwork } from '../../test/helpers/halyard.ts'
import { type RelayedCall, rpcRelay } from '../../test/helpers/rpc-relay.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { listen } from '../../test/helpers/trace-relay.ts'
import { NetworkRegistry } from '../chains/registry.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { createLogger } from '../logger.ts'
import { IndexerService } from './service.ts'

const SLUG = 'ethereum-devnet'
/** eth_getLogs width (blocks per range): many small ranges over the chain. */
const WIDTH = 4
const WORKERS = 4
/** The block whose first eth_getBlockByNumber the parallel relay fails. */
const FAILED_BLOCK = 21n

/** What a relay saw of the follower's backfill ranges. */
interface RangeWatch {
  /** Backfill eth_getLogs ranges seen, by first block. */
  ranges: Map<bigint, bigint>
  /** Requests in flight, by the first block of the range each belongs to. */
  inFlight: Map<bigint, number>
  /** The most distinct ranges with a request in flight at one moment. */
  most: number
  /** eth_getBlockByNumber calls for FAILED_BLOCK. */
  failedBlockCalls: number
}

/**
 * Backfill's range workers, counted at relays in front of anvil: with `backfillWorkers: 4`
 * several ranges have requests in flight at the node at once (with 1, never more than one), a
 * block read that fails once is read again, and the index both leave is the same, read through
 * the readers the APIs use.
 */
describeEachStorage('backfill range workers on $name', (backend) => {
  let anvil: AnvilProcess
  let dev: Devnet
  let head: bigint
  const relays: http.Server[] = []

  /** A relay that maps every request to the backfill range holding its block. */
  const watchingRelay = (watch: RangeWatch, failOnce: boolean) => {
    let failed = false
    const rangeOf = (c: RelayedCall): bigint | undefined => {
      if (c.method === 'eth_getLogs') {
        const f = c.params[0] as { fromBlock?: string; toBlock?: string }
        if (f.fromBlock === undefined || f.toBlock === undefined) return undefined
        const from = BigInt(f.fromBlock)
        const to = BigInt(f.toBlock)
        // One-block ranges are the head path's, not backfill's.
        if (to - from + 1n !== BigInt(WIDTH)) return undefined
        watch.ranges.set(from, to)
        return from
      }
      if (c.method !== 'eth_getBlockByNumber' && c.method !== 'eth_getBlockReceipts') return undefined
      const tag = c.params[0]
      if (typeof tag !== 'string' || !tag.startsWith('0x')) return undefined
      const n = BigInt(tag)
      for (const [from, to] of watch.ranges) if (n >= from && n <= to) return from
      return undefined
    }
    return rpcRelay(anvil.url, {
      refuse: (c) => {
        if (c.method === 'eth_getBlockByNumber' && c.params[0] === toHex(FAILED_BLOCK))
          watch.failedBlockCalls++
        if (!failOnce || failed || c.method !== 'eth_getBlockByNumber') return undefined
        if (c.params[0] !== toHex(FAILED_BLOCK)) return undefined
        failed = true
        return { code: -32603, message: 'internal error' }
      },
      onStart: (c) => {
        const r = rangeOf(c)
        if (r === undefined) return
        watch.inFlight.set(r, (watch.inFlight.get(r) ?? 0) + 1)
        watch.most = Math.max(watch.most, watch.inFlight.size)
      },
      onEnd: (c) => {
        const r = rangeOf(c)
        if (r === undefined) return
        const left = (watch.inFlight.get(r) ?? 1) - 1
        if (left === 0) watch.inFlight.delete(r)
        else watch.inFlight.set(r, left)
      },
    })
  }

  /** Indexes the chain from genesis through a watching relay with `workers`; the index as the APIs read it. */
  const indexWith = async (workers: number, failOnce: boolean) => {
    const watch: RangeWatch = { ranges: new Map(), inFlight: new Map(), most: 0, failedBlockCalls: 0 }
    const relay = watchingRelay(watch, failOnce)
    relays.push(relay)
    const networks = new NetworkRegistry([
      anvilNetwork(anvil, {
        upstreams: [{ url: await listen(relay) }],
        indexer: { enabled: true, maxBlockRange: WIDTH, backfillWorkers: workers },
      }),
    ])
    const storage = await backend.open()
    const indexer = new IndexerService({ storage, networks, logger: createLogger('silent') })
    indexer.start()
    try {
      await indexer.waitForBlock(SLUG, head, 120_000)
    } finally {
      await indexer.stop()
      await networks.close()
    }
    try {
      return { watch, index: await apiSnapshot(storage, SLUG) }
    } finally {
      await storage.close()
    }
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    dev = new Devnet(anvil.url)
    const erc20 = await dev.deploy('DemoERC20', ['Workers', 'WRK', 18])
    const erc721 = await dev.deploy('DemoERC721', ['Workers NFT', 'WNFT'])
    await dev.send('DemoERC20', erc20, 'mint', [DEV_ACCOUNT, 10n ** 6n])
    // Transfers spread over many blocks (each send is mined in a block of its own), with empty
    // blocks between: many ranges, most with rows, far more blocks than the head path's gap.
    for (let i = 0n; i < 16n; i++) {
      await dev.send('DemoERC20', erc20, 'spray', [i, 3n, i + 1n])
      await dev.send('DemoERC721', erc721, 'mint', [DEV_ACCOUNT, 100n + i, ''])
      await dev.rpc('eth_sendTransaction', [
        {
          from: DEV_ACCOUNT,
          to: `0x${(0xbeef00n + i).toString(16).padStart(40, '0')}`,
          value: toHex(i + 1n),
        },
      ])
      await dev.rpc('anvil_mine', ['0x2'])
    }
    head = BigInt(await dev.rpc<string>('eth_blockNumber'))
  }, 180_000)

  afterAll(async () => {
    for (const r of relays) await new Promise((done) => r.close(done))
    await anvil?.stop()
  })

  it('reads several ranges at once, retries a failed one in place, and leaves the index one worker leaves', async () => {
    const single = await indexWith(1, false)
    const parallel = await indexWith(WORKERS, true)
    // One worker reads the next range only once the one before it is read (while it commits).
    expect(single.watch.most).toBe(1)
    expect(parallel.watch.most).toBeGreaterThanOrEqual(2)
    expect(parallel.watch.most).toBeLessThanOrEqual(WORKERS)
    // The failed read was asked again, and the index is whole and in order all the same.
    expect(parallel.watch.failedBlockCalls).toBeGreaterThanOrEqual(2)
    expect(single.index.transfers.length).toBeGreaterThan(16 * 4)
    expect(parallel.index).toEqual(single.index)
    expect(parallel.index.cursor?.number).toBe(head)
  }, 300_000)
})
