import { type Kysely, sql } from 'kysely'
import { bytesToHex } from '../storage/bytea.ts'
import { ensureNetworkId } from '../storage/networks.ts'
import type { Database } from '../storage/schema.ts'
import type { Address, Hash } from '../types.ts'
import { STANDARD_CODE } from './tables.ts'
import { applyNftDeltas, nftDeltas } from './transfer-writes.ts'

export * from './tables.ts'
export type { NativeWrite, StoredNativeTransfer, StoredTransfer, TransferWrite } from './transfer-writes.ts'
export {
  nativeWrite,
  saveNativeTransfers,
  saveTransfers,
  transferWrite,
  writeNativeTransfers,
  writeTransfers,
} from './transfer-writes.ts'

type Db = Kysely<Database>

export interface Cursor {
  number: bigint
  hash: Hash
}

export async function readCursor(db: Db, network: string): Promise<Cursor | null> {
  const row = await db
    .selectFrom('indexer_cursors')
    .select(['block_number', 'block_hash'])
    .where('network', '=', network)
    .executeTakeFirst()
  return row ? { number: BigInt(row.block_number), hash: row.block_hash } : null
}

export async function writeCursor(db: Db, network: string, c: Cursor): Promise<void> {
  await db
    .insertInto('indexer_cursors')
    .values({ network, block_number: c.number.toString(), block_hash: c.hash, updated_at: new Date() })
    .onConflict((oc) =>
      oc.column('network').doUpdateSet({
        block_number: c.number.toString(),
        block_hash: c.hash,
        updated_at: new Date(),
      }),
    )
    .execute()
}

export async function saveBlocks(
  db: Db,
  network: string,
  blocks: { number: bigint; hash: Hash; parentHash: Hash | null }[],
): Promise<void> {
  if (blocks.length === 0) return
  await db
    .insertInto('indexer_blocks')
    .values(
      blocks.map((b) => ({
        network,
        number: b.number.toString(),
        hash: b.hash,
        parent_hash: b.parentHash,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['network', 'number']).doUpdateSet((eb) => ({
        hash: eb.ref('excluded.hash'),
        parent_hash: sql<Hash | null>`coalesce(excluded.parent_hash, indexer_blocks.parent_hash)`,
      })),
    )
    .execute()
}

/** Stored block hashes at or below `atOrBelow`, newest first (for finding a common ancestor). */
export async function recentBlocks(db: Db, network: string, atOrBelow: bigint, limit: number) {
  const rows = await db
    .selectFrom('indexer_blocks')
    .select(['number', 'hash'])
    .where('network', '=', network)
    .where('number', '<=', atOrBelow.toString())
    .orderBy('number', 'desc')
    .limit(limit)
    .execute()
  return rows.map((r) => ({ number: BigInt(r.number), hash: r.hash }))
}

export async function pruneBlocks(db: Db, network: string, below: bigint): Promise<void> {
  await db
    .deleteFrom('indexer_blocks')
    .where('network', '=', network)
    .where('number', '<', below.toString())
    .execute()
}

/**
 * Undoes everything above `ancestor`: NFT holdings by negated deltas of the removed transfers,
 * holder pairs first seen above it (a pair first seen at or below it stays, correctly), the
 * token and native transfers and the block hashes. Transfer rows carry no block hash: what is
 * above the ancestor's number is what the reorg replaced. The caller moves the cursor in the
 * same transaction.
 */
export async function rollbackAbove(db: Db, network: string, ancestor: bigint): Promise<number> {
  const above = ancestor.toString()
  const net = await ensureNetworkId(db, network)
  const removed = await db
    .selectFrom('token_transfers')
    .select(['standard', 'contract', 'token_id', 'from_address', 'to_address', 'value'])
    .where('network_id', '=', net)
    .where('block_number', '>', above)
    .where('standard', '!=', STANDARD_CODE.ERC20)
    .execute()
  await applyNftDeltas(
    db,
    net,
    nftDeltas(
      removed.map((r) => ({
        standard: r.standard === STANDARD_CODE.ERC721 ? 'ERC721' : 'ERC1155',
        contract: bytesToHex<Address>(r.contract),
        tokenId: BigInt(r.token_id),
        from: bytesToHex<Address>(r.from_address),
        to: bytesToHex<Address>(r.to_address),
        value: BigInt(r.value),
      })),
      -1n,
    ),
  )
  await db
    .deleteFrom('token_holders')
    .where('network_id', '=', net)
    .where('first_block', '>', above)
    .execute()
  const del = await db
    .deleteFrom('token_transfers')
    .where('network_id', '=', net)
    .where('block_number', '>', above)
    .executeTakeFirst()
  await db
    .deleteFrom('native_transfers')
    .where('network_id', '=', net)
    .where('block_number', '>', above)
    .execute()
  await db.deleteFrom('indexer_blocks').where('network', '=', network).where('number', '>', above).execute()
  return Number(del.numDeletedRows)
}
