import { afterAll, beforeAll, expect, it } from 'vitest'
import { anvilNetwork } from '../../test/helpers/halyard.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { NetworkRegistry } from '../chains/registry.ts'
import type { NetworkConfig } from '../config/file.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { Devnet } from '../devnet/demo.ts'
import { createLogger } from '../logger.ts'
import type { Storage } from '../storage/database.ts'
import { UpstreamHeadSignal } from './head-signal.ts'
import { IndexerService, type WakeReason } from './service.ts'

const SLUG = 'ethereum-devnet'
/** Far longer than any test here runs: a block indexed without a 'poll' wake came by push. */
const LONG_POLL_MS = 120_000

/** An indexer whose every wake is recorded, with a promise for the first wake of each reason. */
function recordingIndexer(storage: Storage, network: NetworkConfig, pollMs: number) {
  const wakes: WakeReason[] = []
  const first = new Map<WakeReason, () => void>()
  const firstWake = (reason: WakeReason) => new Promise<void>((resolve) => first.set(reason, resolve))
  const live = firstWake('live')
  const head = firstWake('head')
  const poll = firstWake('poll')
  const networks = new NetworkRegistry([network])
  const logger = createLogger('silent')
  const indexer = new IndexerService({
    storage,
    networks,
    logger,
    pollMs,
    heads: new UpstreamHeadSignal({ logger }),
    onWake: (_network, reason) => {
      wakes.push(reason)
      first.get(reason)?.()
    },
  })
  return { indexer, networks, wakes, live, head, poll }
}

describeEachStorage('indexer woken by upstream newHeads on $name', (backend) => {
  let anvil: AnvilProcess
  let dev: Devnet
  const headNow = async () => BigInt(await dev.rpc<string>('eth_blockNumber'))

  beforeAll(async () => {
    anvil = await startAnvil()
    dev = new Devnet(anvil.url)
  })
  afterAll(async () => {
    await anvil?.stop()
  })

  it('with a ws URL, indexes each new block on its push, long before the poll timer', async () => {
    const storage = await backend.open()
    const r = recordingIndexer(storage, anvilNetwork(anvil), LONG_POLL_MS)
    r.indexer.start()
    try {
      await r.indexer.waitForBlock(SLUG, await headNow())
      await r.live
      for (let i = 0; i < 3; i++) {
        await dev.rpc('anvil_mine', ['0x1'])
        await r.indexer.waitForBlock(SLUG, await headNow(), 20_000)
      }
      await r.head
      // No poll timer fired, yet every block was indexed: the pushes woke the follower.
      expect(r.wakes).not.toContain('poll')
      expect(r.wakes).toContain('head')
    } finally {
      await r.indexer.stop()
      await r.networks.close()
      await storage.close()
    }
  })

  it('without a ws URL, only the poll timer wakes the follower', async () => {
    const storage = await backend.open()
    const network = anvilNetwork(anvil, { upstreams: [{ url: anvil.url }] })
    const r = recordingIndexer(storage, network, 200)
    r.indexer.start()
    try {
      await r.indexer.waitForBlock(SLUG, await headNow())
      await dev.rpc('anvil_mine', ['0x1'])
      await r.indexer.waitForBlock(SLUG, await headNow())
      await r.poll
      expect(r.wakes).toContain('poll')
      expect(r.wakes).not.toContain('head')
      expect(r.wakes).not.toContain('live')
    } finally {
      await r.indexer.stop()
      await r.networks.close()
      await storage.close()
    }
  })
})
