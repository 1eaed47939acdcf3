import { randomBytes } from 'node:crypto'
import { type Kysely, sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeEach, serviceUrl } from '../../test/helpers/services.ts'
import {
  rollbackAbove,
  type StoredNativeTransfer,
  type StoredTransfer,
  saveBlocks,
  saveNativeTransfers,
  saveTransfers,
} from '../indexer/store.ts'
import { indexedCounts, ownedPage } from '../nfts/store.ts'
import { openStorage, type Storage } from '../storage/database.ts'
import { migrate } from '../storage/migrate.ts'
import type { Database } from '../storage/schema.ts'
import { touchedContracts, touchedContractsPage } from '../tokens/store.ts'
import { addressBranches } from '../transfers/service.ts'
import { CATEGORIES, readTransfers } from '../transfers/store.ts'
import type { Address, Hash } from '../types.ts'
import { balancesBetween, contractOwners, ownedAfter, tokenOwners, tokensFrom } from './nft-store.ts'

/**
 * Migration 0160 (src/storage/migrations) moves the index tables' rows into the compact layout. Rows written in the old
 * layout (as the old writer did: transfers, the holder pairs and NFT balances derived from them)
 * and then migrated must answer every reader exactly as the same transfers written by today's
 * save functions into a fresh database do, before and after a reorg rollback.
 */

const A = '0x00000000000000000000000000000000000000aa' as Address
const B = '0x00000000000000000000000000000000000000bb' as Address
const C = '0xcccccccccccccccccccccccccccccccccccccccc' as Address
const ZERO = '0x0000000000000000000000000000000000000000' as Address
const USD = '0x1111111111111111111111111111111111111111' as Address
const NFT = '0x2222222222222222222222222222222222222222' as Address
const MULTI = '0x3333333333333333333333333333333333333333' as Address
const NETS = ['ethereum-devnet', 'base-devnet'] as const
const h = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hash
const blockHash = (b: bigint) => `0x${b.toString(16).padStart(64, 'b')}` as Hash

function transfers(shift: bigint): StoredTransfer[] {
  const t = (
    block: bigint,
    logIndex: number,
    batchIndex: number,
    standard: StoredTransfer['standard'],
    contract: Address,
    from: Address,
    to: Address,
    tokenId: bigint | null,
    value: bigint,
  ) =>
    ({
      blockNumber: block + shift,
      blockHash: blockHash(block + shift),
      timestamp: 1_700_000_000 + Number(block) * 12,
      logIndex,
      batchIndex,
      txHash: h(Number(block) * 100 + logIndex),
      standard,
      contract,
      from,
      to,
      tokenId,
      value,
    }) as StoredTransfer
  return [
    t(10n, 0, 0, 'ERC20', USD, ZERO, A, null, 10n ** 24n),
    t(10n, 1, 0, 'ERC721', NFT, ZERO, A, 7n, 1n),
    t(11n, 0, 0, 'ERC20', USD, A, B, 2n ** 255n, 2n ** 255n - 1n),
    t(11n, 3, 0, 'ERC1155', MULTI, ZERO, B, 1n, 5n),
    t(11n, 3, 1, 'ERC1155', MULTI, ZERO, B, 2n ** 256n - 1n, 7n),
    t(12n, 0, 0, 'ERC721', NFT, A, C, 7n, 1n),
    t(12n, 2, 0, 'ERC20', USD, B, C, null, 0n),
    t(13n, 0, 0, 'ERC1155', MULTI, B, A, 1n, 2n),
    t(14n, 0, 0, 'ERC721', NFT, ZERO, B, 8n, 1n),
  ].map((x) => (x.standard === 'ERC20' ? { ...x, tokenId: null } : x))
}

function natives(shift: bigint): StoredNativeTransfer[] {
  const n = (
    block: bigint,
    txIndex: number,
    traceIndex: number,
    from: Address,
    to: Address | null,
    value: bigint,
  ): StoredNativeTransfer => ({
    blockNumber: block + shift,
    blockHash: blockHash(block + shift),
    timestamp: 1_700_000_000 + Number(block) * 12,
    txIndex,
    traceIndex,
    txHash: h(9000 + Number(block) * 10 + txIndex),
    category: traceIndex === 0 ? 'external' : 'internal',
    tracePath: traceIndex === 0 ? null : `0.${traceIndex - 1}`,
    from,
    to,
    value,
  })
  return [
    n(10n, 0, 0, A, B, 10n ** 18n),
    n(11n, 0, 0, B, null, 0n),
    n(11n, 0, 1, B, C, 5n),
    n(13n, 1, 0, C, A, 2n ** 200n),
    n(14n, 0, 0, A, A, 1n),
  ]
}

type Db = Kysely<Database>

/** The rows the 0100-layout writer stored for these transfers (src/indexer/store.ts before 0160). */
async function writeOldLayout(db: Db, network: string, tt: StoredTransfer[], nn: StoredNativeTransfer[]) {
  for (const t of tt)
    await sql`insert into token_transfers (network, block_number, log_index, batch_index, block_hash,
        block_timestamp, tx_hash, standard, contract, from_address, to_address, token_id, value)
      values (${network}, ${t.blockNumber.toString()}, ${t.logIndex}, ${t.batchIndex}, ${t.blockHash},
        ${String(t.timestamp)}, ${t.txHash}, ${t.standard}, ${t.contract}, ${t.from}, ${t.to},
        ${t.tokenId?.toString() ?? null}, ${t.value.toString()})`.execute(db)
  for (const t of nn)
    await sql`insert into native_transfers (network, block_number, tx_index, trace_index, block_hash,
        block_timestamp, tx_hash, category, trace_path, from_address, to_address, value)
      values (${network}, ${t.blockNumber.toString()}, ${t.txIndex}, ${t.traceIndex}, ${t.blockHash},
        ${String(t.timestamp)}, ${t.txHash}, ${t.category}, ${t.tracePath}, ${t.from}, ${t.to},
        ${t.value.toString()})`.execute(db)
  await sql`insert into token_holders (network, holder, contract, first_block)
    select network, holder, contract, min(block_number) from (
      select network, from_address as holder, contract, block_number from token_transfers where standard = 'ERC20'
      union all
      select network, to_address, contract, block_number from token_transfers where standard = 'ERC20') s
    where holder <> ${ZERO} and network = ${network}
    group by network, holder, contract`.execute(db)
  await sql`insert into nft_balances (network, contract, token_id, holder, standard, balance)
    select network, contract, token_id, holder, min(standard), sum(d) from (
      select network, contract, token_id, from_address as holder, standard, -value as d from token_transfers
      where standard <> 'ERC20'
      union all
      select network, contract, token_id, to_address, standard, value from token_transfers where standard <> 'ERC20') s
    where holder <> ${ZERO} and network = ${network}
    group by network, contract, token_id, holder having sum(d) <> 0`.execute(db)
  const blocks = [...new Set([...tt, ...nn].map((t) => t.blockNumber))]
  for (const b of blocks)
    await sql`insert into indexer_blocks (network, number, hash, parent_hash)
      values (${network}, ${b.toString()}, ${blockHash(b)}, null)`.execute(db)
}

/** Everything the readers answer for these rows on one network. */
async function answers(db: Db, network: string) {
  const out: Record<string, unknown> = {}
  for (const who of [A, B, C])
    for (const dir of ['from', 'to', 'both'] as const)
      for (const order of ['asc', 'desc'] as const) {
        out[`transfers ${who} ${dir} ${order}`] = await readTransfers(
          db,
          { network, categories: CATEGORIES, order, limit: 100 },
          addressBranches(who, dir),
        )
        out[`erc1155 ${who} ${dir} ${order}`] = await readTransfers(
          db,
          { network, categories: ['erc1155'], contracts: [MULTI], order, limit: 100, excludeZeroValue: true },
          addressBranches(who, dir),
        )
      }
  out.network = await readTransfers(db, { network, categories: CATEGORIES, order: 'asc', limit: 3 }, [{}])
  for (const who of [A, B, C]) {
    out[`touched ${who}`] = await touchedContracts(db, network, who)
    out[`touched page ${who}`] = await touchedContractsPage(db, network, who, USD, 5)
    out[`owned ${who}`] = await ownedAfter(db, network, who, { limit: 10 })
    out[`owned page ${who}`] = await ownedPage(db, network, who, { page: 1, limit: 10 })
  }
  for (const c of [NFT, MULTI]) {
    out[`tokens ${c}`] = await tokensFrom(db, network, c, { limit: 10 })
    out[`owners ${c}`] = await contractOwners(db, network, c, { limit: 10 })
    out[`counts ${c}`] = await indexedCounts(db, network, c)
    out[`between ${c}`] = [...(await balancesBetween(db, network, c, A, C)).entries()]
  }
  out['token owners'] = await tokenOwners(db, network, MULTI, 1n, { limit: 10 })
  return out
}

const pgUrl = () => serviceUrl('DATABASE_URL')

describeEach(
  [{ name: 'pglite' as const }, { name: 'postgres' as const, needs: ['DATABASE_URL' as const] }],
  'migration 0160 on $name',
  (backend) => {
    const opened: { storage: Storage; schema?: string }[] = []
    let migrated: Db
    let fresh: Db
    const open = async () => {
      const schema = backend.name === 'postgres' ? `t_${randomBytes(6).toString('hex')}` : undefined
      const storage = await openStorage(
        backend.name === 'postgres' ? { databaseUrl: pgUrl(), schema, poolSize: 2, timeoutMs: 30_000 } : {},
      )
      opened.push({ storage, ...(schema ? { schema } : {}) })
      return storage.db
    }

    beforeAll(async () => {
      migrated = await open()
      await migrate(migrated, '0134_sponsorship_ceilings')
      fresh = await open()
      await migrate(fresh)
      for (const [i, network] of NETS.entries()) {
        const shift = BigInt(i) * 1000n
        await writeOldLayout(migrated, network, transfers(shift), natives(shift))
        await saveBlocks(
          fresh,
          network,
          [...new Set(transfers(shift).map((t) => t.blockNumber))].map((n) => ({
            number: n,
            hash: blockHash(n),
            parentHash: null,
          })),
        )
        await saveTransfers(fresh, network, transfers(shift))
        await saveNativeTransfers(fresh, network, natives(shift))
      }
      expect(await migrate(migrated)).toContain('0160_compact_index_tables')
    }, 120_000)
    afterAll(async () => {
      for (const o of opened) {
        await o.storage.close()
        if (o.schema) {
          const client = new pg.Client({ connectionString: pgUrl() })
          await client.connect()
          await client.query(`drop schema if exists ${o.schema} cascade`)
          await client.end()
        }
      }
    })

    it('moves every row: the readers answer as for rows written in the new layout', async () => {
      for (const network of NETS) {
        const got = await answers(migrated, network)
        expect(got).toEqual(await answers(fresh, network))
        // Not two empty answers: the values went through whole (uint256 ends, null token ids).
        const all = got[`transfers ${B} both asc`] as { value: bigint; tokenId: bigint | null }[]
        expect(all.map((r) => r.value)).toContain(2n ** 255n - 1n)
        expect(all.map((r) => r.tokenId)).toContain(2n ** 256n - 1n)
        expect(all.filter((r) => r.tokenId === null).length).toBeGreaterThan(0)
        expect(got[`touched ${A}`]).toEqual([USD])
        expect(got[`counts ${MULTI}`]).toEqual({ owners: 2, tokens: 2 })
      }
      const { rows } = await sql<{ slug: string }>`select slug from networks order by id`.execute(migrated)
      expect(rows.map((r) => r.slug)).toEqual([...NETS].sort())
    })

    it('rolls back by block number alike: transfers, holders, balances and block hashes above the ancestor', async () => {
      for (const db of [migrated, fresh]) expect(await rollbackAbove(db, 'ethereum-devnet', 11n)).toBe(4)
      for (const network of NETS)
        expect(await answers(migrated, network)).toEqual(await answers(fresh, network))
      const left = await sql<{ n: string }>`select count(*)::text as n from indexer_blocks where number > 11
        and network = 'ethereum-devnet'`.execute(migrated)
      expect(left.rows[0]?.n).toBe('0')
      expect((await answers(migrated, 'ethereum-devnet'))[`counts ${NFT}`]).toEqual({ owners: 1, tokens: 1 })
    })
  },
)
