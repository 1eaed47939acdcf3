import { afterAll, beforeAll, expect, it } from 'vitest'
import { type HistoryRelay, startHistoryRelay } from '../../test/fixtures/indexer/history-relay.ts'
import { anvilNetwork } from '../../test/helpers/halyard.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { type Network, NetworkRegistry } from '../chains/registry.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { Devnet } from '../devnet/demo.ts'
import { createLogger } from '../logger.ts'
import type { Storage } from '../storage/database.ts'
import type { Address } from '../types.ts'
import { DEFAULT_SCAN_LIMITS, HistoryScans } from './history-scan.ts'
import { claimScan, openScan, readScan } from './history-store.ts'

const SLUG = 'ethereum-devnet'
/** The relay refuses topic-filtered eth_getLogs wider than this, naming it in the error. */
const MAX_SPAN = 4
const holders = {
  shared: '0x00000000000000000000000000000000000a11ce',
  orphan: '0x0000000000000000000000000000000000000b0b',
  swept: '0x0000000000000000000000000000000000000c0c',
  stopped: '0x0000000000000000000000000000000000000d0d',
} as const satisfies Record<string, Address>

/**
 * Two Halyard instances on one database, as their HistoryScans: an address asked of both is
 * scanned once (the other answers it as running), a scan left claimed by an instance that died
 * is taken over once the claim lapses (on a request, or by the sweep), and a stopped instance
 * lets go of its scan at once. Real anvil behind a relay that refuses wide log ranges, naming
 * the width it serves: the window after a refusal is that width, not half.
 */
describeEachStorage('history scans shared by instances on $name', (backend) => {
  let anvil: AnvilProcess
  let relay: HistoryRelay
  let storage: Storage
  let network: Network
  let N: bigint
  const log = createLogger('silent')
  const scans = (claimSeconds = 60) =>
    new HistoryScans(network, storage.db, { ...DEFAULT_SCAN_LIMITS, window: 1000, claimSeconds }, log)
  const accepted = () => relay.spans.filter((s) => !s.refused).length

  beforeAll(async () => {
    anvil = await startAnvil()
    relay = await startHistoryRelay(anvil.url, MAX_SPAN)
    storage = await backend.open()
    const dev = new Devnet(anvil.url)
    const token = await dev.deploy('DemoERC20', ['Old', 'OLD', 18])
    for (const h of Object.values(holders)) await dev.send('DemoERC20', token, 'mint', [h, 7n])
    await dev.rpc('anvil_mine', ['0x9'])
    N = BigInt(await dev.rpc<string>('eth_blockNumber')) + 1n
    const registry = new NetworkRegistry([anvilNetwork(anvil, { upstreams: [{ url: relay.url }] })])
    network = registry.getBySlug(SLUG)
  })
  afterAll(async () => {
    relay?.hold(false)
    await storage?.close()
    await relay?.close()
    await anvil?.stop()
  })

  it('scans an address asked of two instances once, with the width the node named', async () => {
    const a = scans()
    const b = scans()
    relay.hold(true)
    expect(await a.request(holders.shared, N, 'key-1')).toBe('queued')
    await until(
      'instance A claims the scan',
      async () => (await readScan(storage.db, SLUG, holders.shared))?.claimedBy,
    )
    // B sees A's claim: under way, and nothing queued or running on B.
    expect(await b.request(holders.shared, N, 'key-2')).toBe('running')
    expect(b.load).toEqual({ queued: 0, running: 0 })
    relay.hold(false)
    await a.settled(holders.shared)
    expect((await readScan(storage.db, SLUG, holders.shared))?.done).toBe(true)
    // One refused window of the whole range [0, N), then windows of the 4 blocks the error named
    // (halving would have refused N/2, N/4, …), four filters each, and no window scanned twice.
    expect([...new Set(relay.spans.filter((s) => s.refused).map((s) => s.span))]).toEqual([Number(N)])
    expect(accepted()).toBe(4 * Math.ceil(Number(N) / MAX_SPAN))
    expect(await b.request(holders.shared, N, 'key-2')).toBe('done')
    await Promise.all([a.stop(), b.stop()])
  })

  it('takes over a scan whose instance died, once its claim lapses: on a request, and by the sweep', async () => {
    // Claimed by an instance that stopped answering (no release: it died mid-scan).
    for (const h of [holders.orphan, holders.swept]) {
      await openScan(storage.db, SLUG, h, N, 'dead')
      expect(await claimScan(storage.db, SLUG, h, { by: 'dead-instance', seconds: 2 })).toBe(true)
    }
    const c = scans(1)
    expect(await c.request(holders.orphan, N, 'key-3')).toBe('running')
    expect(c.load).toEqual({ queued: 0, running: 0 })
    // Asked again until the claim has lapsed: then C queues the scan itself.
    await until('the lapsed claim lets C take the scan', async () => {
      await c.request(holders.orphan, N, 'key-3')
      return c.load.queued + c.load.running > 0 || (await readScan(storage.db, SLUG, holders.orphan))?.done
    })
    await until(
      'C finishes the orphaned scan',
      async () => (await readScan(storage.db, SLUG, holders.orphan))?.done,
    )
    // Nobody asks about `swept`: the sweep (every claimSeconds) finds it once the claim lapsed.
    await c.resume()
    await until(
      'the sweep finishes the other',
      async () => (await readScan(storage.db, SLUG, holders.swept))?.done,
    )
    await c.stop()
  })

  it('lets go of its scan when stopped, so another instance takes it at once', async () => {
    const a = scans()
    relay.hold(true)
    expect(await a.request(holders.stopped, N, 'key-4')).toBe('queued')
    await until('A claims it', async () => (await readScan(storage.db, SLUG, holders.stopped))?.claimedBy)
    const stopping = a.stop()
    relay.hold(false)
    await stopping
    const left = await readScan(storage.db, SLUG, holders.stopped)
    expect(left?.done).toBe(false)
    expect(left?.claimedBy).toBeNull()
    const b = scans()
    expect(await b.request(holders.stopped, N, 'key-5')).toBe('queued')
    await b.settled(holders.stopped)
    expect((await readScan(storage.db, SLUG, holders.stopped))?.done).toBe(true)
    await b.stop()
  })
})
