import type http from 'node:http'
import { getContractAddress, pad, toHex } from 'viem'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  FACTORY_INIT,
  FORWARDER_INIT,
  P,
  Q,
  R,
  ROW_COLUMNS,
  type Row,
  ZERO,
} from '../../test/fixtures/indexer/native-fixture.ts'
import { nativeTransferRows } from '../../test/fixtures/indexer/rows.ts'
import { anvilNetwork } from '../../test/helpers/halyard.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { listen, traceRelay } from '../../test/helpers/trace-relay.ts'
import { until } from '../../test/helpers/until.ts'
import { NetworkRegistry } from '../chains/registry.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { createLogger } from '../logger.ts'
import type { Storage } from '../storage/database.ts'
import type { Address, Hash } from '../types.ts'
import { IndexerService } from './service.ts'
import { readCursor } from './store.ts'
import type { BlockConsumer, IndexedBlock } from './types.ts'

/**
 * Native value transfers in the index, on anvil. Every transaction is an
 * 'external' row (value possibly 0); value a contract forwards is an 'internal' row from the
 * call tracer. Four networks over the same anvil: direct (traces), `off` (configured not to
 * trace), `notrace` (a relay that answers debug_* and trace_* with "method not found", as a
 * node without tracing does) and `calltracer` (a relay without trace_block, as geth, whose
 * call tracer can be made to fail). Four, not more: on PostgreSQL each follower holds one of
 * the test pool's five connections (its advisory lock). The contracts: test/fixtures/indexer/native-fixture.ts.
 */
describeEachStorage('native transfers on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: Storage
  let networks: NetworkRegistry
  let dev: Devnet
  let indexer: IndexerService
  let notrace: http.Server
  let calltracer: http.Server
  let failTraces = false
  const seen: IndexedBlock[] = []
  /** Sent before the indexer started: indexed by backfill. */
  const early = {} as Record<'send' | 'deploy' | 'value' | 'zero' | 'nested' | 'starved', Hash>
  let forwarder: Address
  let forwarder2: Address

  const head = async () => BigInt(await dev.rpc<string>('eth_blockNumber'))
  const indexedTo = async (n: bigint, slugs = ['ethereum-devnet']) => {
    for (const s of slugs) await indexer.waitForBlock(s, n, 30_000)
  }
  /**
   * Each network's cursor stands on the node's latest block, hash included: after the reorg test
   * a cursor can stand at the head's number on a replaced block, and the follower re-indexes the
   * new ones only on its next round (the number alone would say it is done).
   */
  const onHead = async (slugs: string[]) => {
    const latest = await dev.client.getBlock()
    await indexedTo(latest.number, slugs)
    for (const s of slugs)
      await until(
        `${s} on the head block`,
        async () => (await readCursor(storage.db, s))?.hash === latest.hash,
      )
  }
  const rows = async (tx: Hash, network = 'ethereum-devnet'): Promise<Row[]> =>
    (await nativeTransferRows(storage.db))
      .filter((r) => r.network === network && r.tx_hash === tx)
      .map((r) => Object.fromEntries(ROW_COLUMNS.map((c) => [c, r[c]])) as unknown as Row)
  const send = async (
    tx: Record<string, unknown>,
  ): Promise<{ hash: Hash; block: bigint; address?: Address }> => {
    const hash = await dev.rpc<Hash>('eth_sendTransaction', [{ from: DEV_ACCOUNT, ...tx }])
    const r = await dev.client.waitForTransactionReceipt({ hash, pollingInterval: 20 })
    return {
      hash,
      block: r.blockNumber,
      ...(r.contractAddress ? { address: r.contractAddress.toLowerCase() as Address } : {}),
    }
  }
  beforeAll(async () => {
    anvil = await startAnvil()
    dev = new Devnet(anvil.url)
    // Mined before the indexer starts, then more than the head path's gap: backfill reads them.
    early.send = (await send({ to: P, value: toHex(10n ** 18n) })).hash
    const d = await send({ data: FORWARDER_INIT })
    early.deploy = d.hash
    forwarder = d.address as Address
    early.value = (await send({ to: forwarder, value: toHex(1234n), data: pad(Q) })).hash
    early.zero = (await send({ to: forwarder, data: pad(Q) })).hash
    forwarder2 = (await send({ data: FORWARDER_INIT })).address as Address
    // forwarder → forwarder2 (empty calldata) → address zero: two frames, one inside the other.
    early.nested = (
      await send({ to: forwarder, value: toHex(77n), data: pad(forwarder2), gas: '0x40000' })
    ).hash
    // With anvil's gas estimate the inner call runs out of gas (the forwarder ignores that): the
    // value never left the forwarder, so no internal row.
    early.starved = (await send({ to: forwarder, value: toHex(78n), data: pad(forwarder2) })).hash
    await dev.rpc('anvil_mine', ['0x20'])

    notrace = traceRelay(anvil.url, () => true)
    calltracer = traceRelay(anvil.url, (method) => method === 'trace_block' || failTraces)
    networks = new NetworkRegistry([
      anvilNetwork(anvil),
      anvilNetwork(anvil, {
        network: 'off',
        indexer: { enabled: true, maxBlockRange: 2000, internalTransfers: 'off' },
      }),
      anvilNetwork(anvil, { network: 'notrace', upstreams: [{ url: await listen(notrace) }] }),
      anvilNetwork(anvil, { network: 'calltracer', upstreams: [{ url: await listen(calltracer) }] }),
    ])
    storage = await backend.open()
    const recorder: BlockConsumer = {
      name: 'test-recorder',
      async onBlock(_trx, block) {
        if (block.network === 'ethereum-devnet') seen.push(block)
      },
      async onRollback() {},
    }
    indexer = new IndexerService({ storage, networks, logger: createLogger('silent') })
    indexer.addConsumer(recorder)
    indexer.start()
  })
  afterAll(async () => {
    await indexer?.stop()
    await networks?.close()
    await storage?.close()
    await new Promise((r) => notrace?.close(r))
    await new Promise((r) => calltracer?.close(r))
    await anvil?.stop()
  })

  it('backfill records blocks mined before the indexer started: external and internal transfers', async () => {
    await indexedTo(await head())
    expect(await rows(early.send)).toMatchObject([
      {
        category: 'external',
        trace_index: 0,
        trace_path: null,
        from_address: DEV_ACCOUNT,
        to_address: P,
        value: '1000000000000000000',
        tx_index: 0,
      },
    ])
    // A creation's `to` is the address it deployed.
    expect(await rows(early.deploy)).toMatchObject([
      { category: 'external', to_address: forwarder, value: '0' },
    ])
    expect(await rows(early.value)).toMatchObject([
      {
        category: 'external',
        trace_index: 0,
        from_address: DEV_ACCOUNT,
        to_address: forwarder,
        value: '1234',
      },
      {
        category: 'internal',
        trace_index: 1,
        trace_path: '0',
        from_address: forwarder,
        to_address: Q,
        value: '1234',
      },
    ])
    // Forwarding zero value is a frame without value: no internal row.
    expect(await rows(early.zero)).toMatchObject([
      { category: 'external', to_address: forwarder, value: '0' },
    ])
    expect(await rows(early.nested)).toMatchObject([
      { category: 'external', trace_index: 0, value: '77' },
      {
        category: 'internal',
        trace_index: 1,
        trace_path: '0',
        from_address: forwarder,
        to_address: forwarder2,
        value: '77',
      },
      {
        category: 'internal',
        trace_index: 2,
        trace_path: '0.0',
        from_address: forwarder2,
        to_address: ZERO,
        value: '77',
      },
    ])
    expect(await rows(early.starved)).toMatchObject([{ category: 'external', value: '78' }])
    // A node without trace_block: the call tracer gives the same rows.
    await indexedTo(await head(), ['ethereum-calltracer'])
    for (const tx of Object.values(early))
      expect(await rows(tx, 'ethereum-calltracer'), tx).toEqual(await rows(tx))
    const [row] = await rows(early.send)
    const block = await dev.client.getBlock({ blockNumber: BigInt(row?.block_number ?? 0) })
    expect(row?.block_hash).toBe(block.hash)
  })

  it('head path: a plain send, a forwarding call and a zero-value call, each in its own block', async () => {
    await indexedTo(await head())
    const plain = await send({ to: R, value: toHex(5n) })
    const fwd = await send({ to: forwarder, value: toHex(999n), data: pad(R) })
    const zero = await send({ to: forwarder, data: pad(R) })
    await indexedTo(zero.block)
    expect(await rows(plain.hash)).toEqual([
      expect.objectContaining({
        category: 'external',
        trace_index: 0,
        from_address: DEV_ACCOUNT,
        to_address: R,
        value: '5',
      }),
    ])
    expect(await rows(fwd.hash)).toMatchObject([
      { category: 'external', from_address: DEV_ACCOUNT, to_address: forwarder, value: '999' },
      {
        category: 'internal',
        trace_index: 1,
        trace_path: '0',
        from_address: forwarder,
        to_address: R,
        value: '999',
      },
    ])
    expect(await rows(zero.hash)).toMatchObject([{ category: 'external', value: '0' }])
    // A CREATE frame with value, read by both trace methods.
    const factory = (await send({ data: FACTORY_INIT })).address as Address
    const created = await send({ to: factory, value: toHex(55n) })
    const child = getContractAddress({ from: factory, nonce: 1n }).toLowerCase()
    expect(await dev.client.getBalance({ address: child as Address })).toBe(55n)
    await indexedTo(created.block, ['ethereum-devnet', 'ethereum-calltracer'])
    expect(await rows(created.hash)).toMatchObject([
      { category: 'external', to_address: factory, value: '55' },
      {
        category: 'internal',
        trace_index: 1,
        trace_path: '0',
        from_address: factory,
        to_address: child,
        value: '55',
      },
    ])
    expect(await rows(created.hash, 'ethereum-calltracer')).toEqual(await rows(created.hash))
    // The webhook matcher (a consumer) gets the same internal transfers with the block.
    const b = seen.find((s) => s.number === fwd.block)
    expect(b?.internalTransfers).toEqual([
      { txHash: fwd.hash, from: forwarder, to: R, value: 999n, path: [0], callType: 'call' },
    ])
    expect(indexer.internalTransfersAvailability('ethereum-devnet')).toEqual({ available: true })
  })

  it("a reorg removes the replaced blocks' transfers and records the new ones", async () => {
    await indexedTo(await head())
    const a = await send({ to: forwarder, value: toHex(31n), data: pad(P) })
    const b = await send({ to: Q, value: toHex(32n) })
    await indexedTo(b.block)
    expect(await rows(a.hash)).toHaveLength(2)
    expect(await rows(b.hash)).toHaveLength(1)
    // Replace both blocks; the new chain has one plain send to R in the first of them.
    await dev.rpc('anvil_reorg', [2, [[{ from: DEV_ACCOUNT, to: R, value: '0x21' }, 0]]])
    const newHead = await dev.client.getBlock({ blockTag: 'latest' })
    await until(
      'cursor on the new chain',
      async () => (await indexer.cursor('ethereum-devnet'))?.hash === newHead.hash,
    )
    expect(await rows(a.hash)).toEqual([])
    expect(await rows(b.hash)).toEqual([])
    const replaced = (await nativeTransferRows(storage.db)).filter(
      (r) => r.network === 'ethereum-devnet' && BigInt(r.block_number) >= a.block,
    )
    expect(replaced).toHaveLength(1)
    expect(replaced[0]).toMatchObject({ to_address: R, value: '33' })
    const mined = await dev.client.getBlock({ blockNumber: a.block })
    expect(replaced[0]?.block_hash).toBe(mined.hash)
  })

  it('a network configured off or whose node does not trace: external rows only, and says why', async () => {
    const n = await head()
    await indexedTo(n, ['ethereum-devnet', 'ethereum-off', 'ethereum-notrace'])
    for (const slug of ['ethereum-off', 'ethereum-notrace']) {
      expect(await rows(early.value, slug)).toMatchObject([{ category: 'external', value: '1234' }])
      const internal = (await nativeTransferRows(storage.db))
        .filter((r) => r.network === slug && r.category === 'internal')
        .map((r) => ({ tx_hash: r.tx_hash }))
      expect(internal).toEqual([])
    }
    expect(indexer.internalTransfersAvailability('ethereum-off')).toEqual({
      available: false,
      reason: 'switched off in the network config (indexer.internalTransfers: off)',
    })
    const notraced = indexer.internalTransfersAvailability('ethereum-notrace')
    expect(notraced.available).toBe(false)
    expect(!notraced.available && notraced.reason).toMatch(
      /^the node answers neither debug_traceBlockByNumber \(callTracer\) nor trace_block \(.*Method not found/,
    )
    expect(indexer.internalTransfersAvailability('nowhere')).toEqual({
      available: false,
      reason: 'unknown network nowhere',
    })
    const lines = Object.fromEntries(
      await Promise.all(
        indexer
          .readinessChecks()
          .filter((c) => c.info && c.name.startsWith('internal transfers'))
          .map(async (c) => [c.name, await c.info?.()]),
      ),
    )
    expect(lines).toEqual({
      'internal transfers ethereum/devnet': 'available (trace_block)',
      'internal transfers ethereum/off':
        'unavailable: switched off in the network config (indexer.internalTransfers: off)',
      'internal transfers ethereum/notrace': expect.stringMatching(/^unavailable: the node answers neither/),
      'internal transfers ethereum/calltracer': 'available (debug_traceBlockByNumber)',
    })
  })

  it('a block whose tracing fails is indexed without internal transfers; the index goes on', async () => {
    await onHead(['ethereum-calltracer'])
    failTraces = true
    let lost: { hash: Hash; block: bigint }
    try {
      lost = await send({ to: forwarder, value: toHex(41n), data: pad(P) })
      await indexedTo(lost.block, ['ethereum-calltracer'])
    } finally {
      failTraces = false
    }
    expect(await rows(lost.hash, 'ethereum-calltracer')).toMatchObject([
      { category: 'external', value: '41' },
    ])
    const after = await send({ to: forwarder, value: toHex(42n), data: pad(P) })
    await indexedTo(after.block, ['ethereum-calltracer'])
    expect(await rows(after.hash, 'ethereum-calltracer')).toMatchObject([
      { category: 'external', value: '42' },
      { category: 'internal', trace_path: '0', to_address: P, value: '42' },
    ])
    const line = indexer.readinessChecks().find((c) => c.name === 'internal transfers ethereum/calltracer')
    expect(await line?.info?.()).toBe(
      `available (debug_traceBlockByNumber); 1 block(s) indexed without them after tracing failed, last ${lost.block}`,
    )
  })
})
