import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork } from '../../test/helpers/halyard.ts'
import { type StorageBackend, storageBackends, type TestStorage } from '../../test/helpers/storage.ts'
import { NetworkRegistry } from '../chains/registry.ts'
import type { NetworkConfigInput } from '../config/file.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { Devnet } from '../devnet/demo.ts'
import { createLogger } from '../logger.ts'
import { Metrics } from '../metrics.ts'
import { networkSchema } from '../server/config-schema.ts'
import type { Address, Hash } from '../types.ts'
import { historyChoice, recordExistingStart, startBlock } from './history.ts'
import { readCompleteFrom } from './history-store.ts'
import { IndexerProgress } from './progress.ts'
import { saveNativeTransfers } from './store.ts'

/**
 * `indexer.history`: the choice as configured (and its deprecated alias), the start recorded
 * once, an index older than the record, and the catch-up progress line.
 */
describe('indexer.history', () => {
  let anvil: AnvilProcess
  let storage: TestStorage
  const registries: NetworkRegistry[] = []
  const net = (overrides: Partial<NetworkConfigInput>) => {
    const r = new NetworkRegistry([anvilNetwork(anvil, overrides)])
    registries.push(r)
    return r.all()[0] as ReturnType<NetworkRegistry['all']>[number]
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await (storageBackends().at(-1) as StorageBackend).open()
  })
  afterAll(async () => {
    for (const r of registries) await r.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('defaults to genesis on public networks too; head only when asked; startBlock is an alias', () => {
    const mainnet = { network: 'mainnet', chainId: 1 }
    expect(historyChoice(net(mainnet))).toEqual({ kind: 'genesis' })
    expect(historyChoice(net({ ...mainnet, indexer: { history: 'head' } }))).toEqual({ kind: 'head' })
    expect(historyChoice(net({ ...mainnet, indexer: { startBlock: 42 } }))).toEqual({
      kind: 'block',
      block: 42n,
    })
    expect(historyChoice(net({ ...mainnet, indexer: { history: 7 } }))).toEqual({ kind: 'block', block: 7n })
    const both = { chain: 'ethereum', network: 'x', chainId: 1, upstreams: [{ url: anvil.url }] }
    expect(() => networkSchema.parse({ ...both, indexer: { history: 5, startBlock: 5 } })).toThrow(
      /history or its deprecated alias startBlock/,
    )
    expect(() => networkSchema.parse({ ...both, indexer: { history: 'yesterday' } })).toThrow()
  })

  it('records the start once: head minus confirmations, then the recorded block whatever the config', async () => {
    const dev = new Devnet(anvil.url)
    await dev.rpc('anvil_mine', ['0x9'])
    const head = BigInt(await dev.rpc<string>('eth_blockNumber'))
    const n = net({ network: 'head-start', confirmations: 2, indexer: { history: 'head' } })
    expect(await startBlock(storage.db, n)).toBe(head - 2n)
    const later = net({ network: 'head-start', indexer: { history: 'genesis' } })
    expect(await startBlock(storage.db, later)).toBe(head - 2n)
    expect(await readCompleteFrom(storage.db, 'ethereum-head-start')).toBe(head - 2n)
  })

  it('an index older than the record is complete from the lowest block it holds', async () => {
    const n = net({ network: 'old-index', chainId: 1 })
    await saveNativeTransfers(storage.db, n.slug, [
      {
        blockNumber: 1234n,
        blockHash: `0x${'ab'.repeat(32)}` as Hash,
        timestamp: 1,
        txIndex: 0,
        traceIndex: 0,
        txHash: `0x${'cd'.repeat(32)}` as Hash,
        category: 'external',
        tracePath: null,
        from: `0x${'11'.repeat(20)}` as Address,
        to: null,
        value: 0n,
      },
    ])
    const cursor = { number: 2000n, hash: `0x${'ef'.repeat(32)}` as const }
    expect(await recordExistingStart(storage.db, n, cursor)).toBe(1234n)
    // A devnet without a configured start was always indexed from genesis.
    const dev = net({ network: 'devnet' })
    expect(await recordExistingStart(storage.db, dev, cursor)).toBe(0n)
  })

  it('logs catch-up progress with rate and ETA, and sets the gauges', async () => {
    const lines: Record<string, unknown>[] = []
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)) as Record<string, unknown>)
        done()
      },
    })
    let now = 0
    const metrics = new Metrics({ defaultMetrics: false })
    const p = new IndexerProgress(createLogger('info', sink), metrics, 10_000, () => now)
    p.completeFrom('n', 100n)
    p.observe('n', 100n, 10_100n)
    now = 5_000
    p.observe('n', 150n, 10_100n) // within the interval: no line
    now = 10_000
    p.observe('n', 1_100n, 10_100n) // 1,000 blocks in 10 s, 9,000 to go
    await new Promise<void>((r) => sink.end(r))
    expect(lines).toEqual([
      expect.objectContaining({
        msg: 'indexer catching up',
        network: 'n',
        cursor: '1100',
        head: '10100',
        blocksPerSecond: 100,
        etaSeconds: 90,
      }),
    ])
    const text = await metrics.registry.metrics()
    expect(text).toContain('halyard_indexer_complete_from_block{network="n"} 100')
    expect(text).toContain('halyard_indexer_indexed_block{network="n"} 1100')
  })
})
