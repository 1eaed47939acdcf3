import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pad, toHex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiSnapshot } from '../../../test/fixtures/indexer/api-snapshot.ts'
import { writeCryoParquet } from '../../../test/fixtures/indexer/cryo-writer.ts'
import { FORWARDER_INIT, P, Q } from '../../../test/fixtures/indexer/native-fixture.ts'
import { runCli } from '../../../test/helpers/cli.ts'
import { anvilNetwork } from '../../../test/helpers/halyard.ts'
import { openTestPGlite } from '../../../test/helpers/storage.ts'
import { NetworkRegistry } from '../../chains/registry.ts'
import { type AnvilProcess, startAnvil } from '../../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../../devnet/demo.ts'
import { createLogger } from '../../logger.ts'
import type { Storage } from '../../storage/database.ts'
import { readTransfers } from '../../transfers/store.ts'
import type { Address, Hash } from '../../types.ts'
import { IndexerService } from '../service.ts'
import { readCursor } from '../store.ts'
import { CryoParquetSource } from './cryo-parquet.ts'
import { importBulk } from './import.ts'

/**
 * Importing cryo-layout Parquet files (written from anvil's own answers by
 * test/fixtures/indexer/cryo-writer.ts) leaves the same index as following the chain over RPC:
 * token and native transfers, token holders and NFT balances, read through the readers the
 * APIs use, and the cursor; a follower then carries on from the imported cursor.
 */
const SLUG = 'ethereum-devnet'

describe('bulk import of cryo Parquet', () => {
  let anvil: AnvilProcess
  let dev: Devnet
  let dir: string
  let head: bigint
  let imported: Storage
  let followed: Storage
  const addresses = new Set<Address>()

  const send = async (tx: Record<string, unknown>): Promise<{ hash: Hash; address?: Address }> => {
    const hash = await dev.rpc<Hash>('eth_sendTransaction', [{ from: DEV_ACCOUNT, ...tx }])
    const r = await dev.client.waitForTransactionReceipt({ hash, pollingInterval: 20 })
    return { hash, ...(r.contractAddress ? { address: r.contractAddress.toLowerCase() as Address } : {}) }
  }

  const snapshot = (storage: Storage) => apiSnapshot(storage, SLUG, addresses)

  beforeAll(async () => {
    anvil = await startAnvil()
    dev = new Devnet(anvil.url)
    const erc20 = await dev.deploy('DemoERC20', ['Bulk', 'BULK', 18])
    const erc721 = await dev.deploy('DemoERC721', ['Bulk NFT', 'BNFT'])
    const erc1155 = await dev.deploy('DemoERC1155', ['x/{id}', 'Bulk Items', 'BITM'])
    await dev.send('DemoERC20', erc20, 'mint', [DEV_ACCOUNT, 1000n])
    await dev.send('DemoERC20', erc20, 'transfer', [P, 250n])
    await dev.send('DemoERC20', erc20, 'spray', [7n, 5n, 3n])
    await dev.send('DemoERC721', erc721, 'mint', [DEV_ACCOUNT, 1n, 'ipfs://one'])
    await dev.send('DemoERC721', erc721, 'mintRange', [DEV_ACCOUNT, 10n, 3n])
    await dev.send('DemoERC721', erc721, 'transferFrom', [DEV_ACCOUNT, Q, 11n])
    await dev.send('DemoERC1155', erc1155, 'mint', [DEV_ACCOUNT, 5n, 40n])
    await dev.send('DemoERC1155', erc1155, 'mintBatch', [DEV_ACCOUNT, [6n, 7n], [2n, 3n]])
    await dev.send('DemoERC1155', erc1155, 'safeTransferFrom', [DEV_ACCOUNT, P, 5n, 15n, '0x'])
    await send({ to: P, value: toHex(10n ** 18n) })
    const forwarder = (await send({ data: FORWARDER_INIT })).address as Address
    // The forwarder passes the value on to Q: an internal transfer.
    await send({ to: forwarder, value: toHex(1234n), data: pad(Q) })
    await dev.rpc('anvil_mine', ['0x2'])
    head = BigInt(await dev.rpc<string>('eth_blockNumber'))
    dir = mkdtempSync(path.join(tmpdir(), 'halyard-cryo-'))
    await writeCryoParquet(anvil.url, dir, 0n, head, { chunk: 4 })

    imported = await openTestPGlite()
    followed = await openTestPGlite()
    const result = await importBulk({
      storage: imported,
      network: { slug: SLUG, chainId: anvil.chainId },
      source: CryoParquetSource.open(dir),
      batchBlocks: 3,
    })
    expect(result).toMatchObject({ from: 0n, to: head, blocks: Number(head) + 1 })

    const networks = new NetworkRegistry([anvilNetwork(anvil)])
    const indexer = new IndexerService({ storage: followed, networks, logger: createLogger('silent') })
    indexer.start()
    try {
      await indexer.waitForBlock(SLUG, head, 60_000)
    } finally {
      await indexer.stop()
      await networks.close()
    }
  }, 180_000)

  afterAll(async () => {
    await imported?.close()
    await followed?.close()
    await anvil?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('leaves the same transfers, holders, NFT balances and cursor as following over RPC', async () => {
    const viaRpc = await snapshot(followed)
    const viaParquet = await snapshot(imported)
    // The chain has every kind: otherwise equal could mean equally empty.
    const kinds = new Set(viaRpc.transfers.map((t) => t.category))
    expect([...kinds].sort()).toEqual(['erc1155', 'erc20', 'erc721', 'external', 'internal'])
    expect(Object.values(viaRpc.nfts).flat().length).toBeGreaterThan(3)
    expect(Object.values(viaRpc.holders).flat().length).toBeGreaterThan(3)
    expect(viaParquet.transfers).toEqual(viaRpc.transfers)
    expect(viaParquet.holders).toEqual(viaRpc.holders)
    expect(viaParquet.nfts).toEqual(viaRpc.nfts)
    expect(viaParquet.cursor).toEqual(viaRpc.cursor)
    expect(viaParquet.cursor?.number).toBe(head)
  })

  it('imports nothing twice, and refuses a source that leaves a gap above the cursor', async () => {
    const again = await importBulk({
      storage: imported,
      network: { slug: SLUG, chainId: anvil.chainId },
      source: CryoParquetSource.open(dir),
    })
    expect(again.blocks).toBe(0)
    const later = mkdtempSync(path.join(tmpdir(), 'halyard-cryo-'))
    const fresh = await openTestPGlite()
    try {
      const early = mkdtempSync(path.join(tmpdir(), 'halyard-cryo-'))
      await writeCryoParquet(anvil.url, early, 0n, 3n)
      await importBulk({
        storage: fresh,
        network: { slug: SLUG, chainId: 31337 },
        source: CryoParquetSource.open(early),
      })
      rmSync(early, { recursive: true, force: true })
      await writeCryoParquet(anvil.url, later, 6n, head)
      await expect(
        importBulk({
          storage: fresh,
          network: { slug: SLUG, chainId: 31337 },
          source: CryoParquetSource.open(later),
        }),
      ).rejects.toThrow(/gap/)
      expect((await readCursor(fresh.db, SLUG))?.number).toBe(3n)
    } finally {
      await fresh.close()
      rmSync(later, { recursive: true, force: true })
    }
  })

  it('lets the follower carry on from the imported cursor', async () => {
    const networks = new NetworkRegistry([anvilNetwork(anvil)])
    const indexer = new IndexerService({ storage: imported, networks, logger: createLogger('silent') })
    indexer.start()
    try {
      const { hash } = await send({ to: Q, value: toHex(99n) })
      const now = BigInt(await dev.rpc<string>('eth_blockNumber'))
      await indexer.waitForBlock(SLUG, now, 30_000)
      const rows = await readTransfers(
        imported.db,
        { network: SLUG, categories: ['external'], order: 'asc', limit: 10_000 },
        [{ to: Q }],
      )
      expect(rows.filter((r) => r.txHash === hash).map((r) => r.value)).toEqual([99n])
    } finally {
      await indexer.stop()
      await networks.close()
    }
  })

  it('runs as `halyard import`, refusing bad arguments with the usage', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-import-'))
    const env = { HALYARD_DATA_DIR: dataDir, DATABASE_URL: '' }
    try {
      const help = await runCli(['import', '--help'], env)
      expect(help.code).toBe(0)
      expect(help.stdout).toContain('--parquet DIR')
      const unknown = await runCli(['import', '--network', SLUG, '--parquet', dir, '--frobnicate'], env)
      expect(unknown.code).toBe(2)
      expect(unknown.stderr).toContain('usage: halyard')
      const ran = await runCli(['import', '--network', SLUG, '--parquet', dir], env)
      expect(ran.code, ran.stderr).toBe(0)
      expect(ran.stdout).toContain(`imported blocks 0..${head}`)
      const twice = await runCli(['import', '--network', SLUG, '--parquet', dir], env)
      expect(twice.code, twice.stderr).toBe(0)
      expect(twice.stdout).toContain('nothing to import')
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 400_000)
})
