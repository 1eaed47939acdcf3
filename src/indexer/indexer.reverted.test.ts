import type http from 'node:http'
import { toHex } from 'viem'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { P, ROW_COLUMNS, type Row } from '../../test/fixtures/indexer/native-fixture.ts'
import { nativeTransferRows } from '../../test/fixtures/indexer/rows.ts'
import { anvilNetwork } from '../../test/helpers/halyard.ts'
import { type RelayedCall, rpcRelay } from '../../test/helpers/rpc-relay.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { listen } from '../../test/helpers/trace-relay.ts'
import { NetworkRegistry } from '../chains/registry.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { createLogger } from '../logger.ts'
import type { Storage } from '../storage/database.ts'
import type { Address, Hash } from '../types.ts'
import { IndexerService } from './service.ts'
import type { BlockConsumer, IndexedTransaction } from './types.ts'

/** Runtime code `PUSH1 0, PUSH1 0, REVERT`: every call to it reverts. */
const ALWAYS_REVERTS = '0x60006000fd'
const REVERTER = '0x00000000000000000000000000000000000000f1' as Address
const NETWORKS = ['ethereum-devnet', 'ethereum-noreceipts'] as const

/**
 * Reverted transactions in the index, on anvil: a value transfer to a contract that always
 * reverts moved nothing, so it has no native_transfers row, while the paid transfer beside it
 * has its row. Two networks over the same anvil: direct (eth_getBlockReceipts) and
 * `noreceipts`, a relay answering eth_getBlockReceipts with "method not found", as a node
 * without it does (the indexer then reads one receipt per transaction). Both the backfill path
 * (blocks mined before the indexer started) and the head path (one block at a time).
 */
describeEachStorage('reverted transactions on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: Storage
  let networks: NetworkRegistry
  let dev: Devnet
  let indexer: IndexerService
  let relay: http.Server
  const relayed: string[] = []
  const seen = new Map<string, IndexedTransaction>()
  const early = {} as Record<'reverted' | 'paid', Hash>

  const rows = async (tx: Hash, network: string): Promise<Row[]> =>
    (await nativeTransferRows(storage.db))
      .filter((r) => r.network === network && r.tx_hash === tx)
      .map((r) => Object.fromEntries(ROW_COLUMNS.map((c) => [c, r[c]])) as unknown as Row)
  const indexedTo = async (n: bigint) => {
    for (const s of NETWORKS) await indexer.waitForBlock(s, n, 30_000)
  }
  const sendBoth = async () => {
    // An explicit gas limit: anvil would refuse to estimate a transaction that reverts.
    const reverted = await dev.rpc<Hash>('eth_sendTransaction', [
      { from: DEV_ACCOUNT, to: REVERTER, value: toHex(5n), gas: '0x10000' },
    ])
    const paid = await dev.rpc<Hash>('eth_sendTransaction', [{ from: DEV_ACCOUNT, to: P, value: toHex(7n) }])
    return { reverted, paid }
  }
  const expectRows = async (tx: { reverted: Hash; paid: Hash }) => {
    for (const network of NETWORKS) {
      expect(await rows(tx.reverted, network)).toEqual([])
      expect(await rows(tx.paid, network)).toMatchObject([
        { category: 'external', from_address: DEV_ACCOUNT, to_address: P, value: '7' },
      ])
    }
    // Consumers (the webhooks' address_activity) see the flag on the block's transactions.
    expect(seen.get(tx.reverted)?.reverted).toBe(true)
    expect(seen.get(tx.paid)?.reverted).toBe(false)
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    dev = new Devnet(anvil.url)
    await dev.rpc('anvil_setCode', [REVERTER, ALWAYS_REVERTS])
    Object.assign(early, await sendBoth())
    const r = await dev.client.waitForTransactionReceipt({ hash: early.paid, pollingInterval: 20 })
    const failed = await dev.client.getTransactionReceipt({ hash: early.reverted })
    expect(failed.status).toBe('reverted')
    expect(r.status).toBe('success')
    // More than the head path's gap: the indexer backfills these blocks.
    await dev.rpc('anvil_mine', ['0x20'])

    relay = rpcRelay(anvil.url, {
      refuse: (call: RelayedCall) => {
        relayed.push(call.method)
        return call.method === 'eth_getBlockReceipts'
          ? { code: -32601, message: 'the method eth_getBlockReceipts does not exist/is not available' }
          : undefined
      },
    })
    networks = new NetworkRegistry([
      anvilNetwork(anvil),
      anvilNetwork(anvil, { network: 'noreceipts', upstreams: [{ url: await listen(relay) }] }),
    ])
    storage = await backend.open()
    const recorder: BlockConsumer = {
      name: 'test-recorder',
      async needsFullBlocks() {
        return true
      },
      async onBlock(_trx, block) {
        if (block.network === 'ethereum-devnet') for (const t of block.transactions ?? []) seen.set(t.hash, t)
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
    await new Promise((r) => relay?.close(r))
    await anvil?.stop()
  })

  it('backfill: the reverted transfer has no row, the paid one has', async () => {
    await indexedTo(BigInt(await dev.rpc<string>('eth_blockNumber')))
    await expectRows(early)
  })

  it('head path: both in one block, with and without eth_getBlockReceipts', async () => {
    await indexedTo(BigInt(await dev.rpc<string>('eth_blockNumber')))
    await dev.rpc('evm_setAutomine', [false])
    const both = await sendBoth()
    await dev.rpc('evm_mine')
    await dev.rpc('evm_setAutomine', [true])
    const r = await dev.client.waitForTransactionReceipt({ hash: both.paid, pollingInterval: 20 })
    const failed = await dev.client.getTransactionReceipt({ hash: both.reverted })
    expect(failed.blockNumber).toBe(r.blockNumber)
    expect(failed.status).toBe('reverted')
    await indexedTo(r.blockNumber)
    await expectRows(both)
  })

  it('a node without eth_getBlockReceipts is asked once, then per transaction', () => {
    expect(relayed.filter((m) => m === 'eth_getBlockReceipts')).toHaveLength(1)
    expect(relayed).toContain('eth_getTransactionReceipt')
  })
})
