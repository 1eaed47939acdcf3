import { type Kysely, sql } from 'kysely'
import type { Database } from '../../storage/schema.ts'
import type { Address, Hex } from '../../types.ts'
import type { Category } from '../store.ts'

/**
 * Test and bench only: transfer rows written straight into the indexer's tables, a known mix of
 * every category around one address (sent, received, sent to itself, ERC-1155 batches, other
 * addresses' rows in the same blocks), so pagination can be checked against the full list.
 */

export interface SeedRow {
  source: 0 | 1
  block: bigint
  a: number
  b: number
  category: Category
  from: Address
  to: Address
  contract: Address | null
  tokenId: bigint | null
  value: bigint
  txHash: string
}

const addr = (n: number): Hex => `0x${n.toString(16).padStart(40, '0')}`
export const SEED_OTHER = addr(0xb0b)
export const SEED_TOKEN = addr(0x7070)
export const SEED_NFT = addr(0x7171)
export const SEED_ITEMS = addr(0x7272)

/** `count` rows touching `holder` (plus noise), about four to a block from `firstBlock` on. */
export function seedRows(holder: Address, count: number, firstBlock = 1n): SeedRow[] {
  const out: SeedRow[] = []
  for (let i = 0; i < count; i++) {
    const block = firstBlock + BigInt(Math.floor(i / 4))
    const slot = i % 4
    const kind = i % 7
    const sent = i % 3 !== 1
    const self = i % 11 === 0
    const from = sent ? holder : SEED_OTHER
    const to = self ? holder : sent ? SEED_OTHER : holder
    const txHash = `0x${(i + 1).toString(16).padStart(64, '0')}`
    const value = i % 13 === 0 ? 0n : BigInt(i + 1) * 10n ** 15n
    if (kind === 0) out.push({ ...nat(block, slot, 0, 'external'), from, to, value, txHash })
    else if (kind === 1) out.push({ ...nat(block, slot, 1 + (i % 2), 'internal'), from, to, value, txHash })
    else if (kind <= 3)
      out.push({ ...tok(block, slot, 0, 'erc20', SEED_TOKEN, null), from, to, value, txHash })
    else if (kind === 4)
      out.push({ ...tok(block, slot, 0, 'erc721', SEED_NFT, BigInt(i)), from, to, value: 1n, txHash })
    else {
      // ERC-1155: every other one a batch of three ids in one log.
      const n = kind === 5 ? 3 : 1
      for (let b = 0; b < n; b++)
        out.push({
          ...tok(block, slot, b, 'erc1155', SEED_ITEMS, BigInt(b + 1)),
          from,
          to,
          value: 5n,
          txHash,
        })
    }
    // Someone else's transfer in the same block: must never show.
    if (slot === 3)
      out.push({
        ...tok(block, 10, 0, 'erc20', SEED_TOKEN, null),
        from: SEED_OTHER,
        to: addr(0xcafe),
        value: 1n,
        txHash,
      })
  }
  return out
}

const nat = (block: bigint, tx: number, trace: number, category: Category) => ({
  source: 0 as const,
  block,
  a: tx,
  b: trace,
  category,
  contract: null,
  tokenId: null,
})
const tok = (
  block: bigint,
  log: number,
  batch: number,
  category: Category,
  contract: Address,
  id: bigint | null,
) => ({
  source: 1 as const,
  block,
  a: log,
  b: batch,
  category,
  contract,
  tokenId: id,
})

const STANDARD: Record<string, string> = { erc20: 'ERC20', erc721: 'ERC721', erc1155: 'ERC1155' }

/** Inserts the rows (1,000 to a statement); block timestamps are 12 s apart. */
export async function insertSeed(
  db: Kysely<Database>,
  network: string,
  rows: readonly SeedRow[],
): Promise<void> {
  const ts = (b: bigint) => (1_700_000_000n + b * 12n).toString()
  const hash = (b: bigint) => `0x${b.toString(16).padStart(64, 'a')}`
  for (let i = 0; i < rows.length; i += 1000) {
    const chunk = rows.slice(i, i + 1000)
    const native = chunk.filter((r) => r.source === 0)
    const token = chunk.filter((r) => r.source === 1)
    if (native.length > 0)
      await sql`insert into native_transfers (network, block_number, tx_index, trace_index, block_hash,
          block_timestamp, tx_hash, category, trace_path, from_address, to_address, value)
        values ${sql.join(
          native.map(
            (r) =>
              sql`(${network}, ${r.block.toString()}, ${r.a}, ${r.b}, ${hash(r.block)}, ${ts(r.block)}, ${r.txHash},
                ${r.category}, ${r.b === 0 ? null : `0.${r.b - 1}`}, ${r.from}, ${r.to}, ${r.value.toString()})`,
          ),
        )}`.execute(db)
    if (token.length > 0)
      await sql`insert into token_transfers (network, block_number, log_index, batch_index, block_hash,
          block_timestamp, tx_hash, standard, contract, from_address, to_address, token_id, value)
        values ${sql.join(
          token.map(
            (r) =>
              sql`(${network}, ${r.block.toString()}, ${r.a}, ${r.b}, ${hash(r.block)}, ${ts(r.block)}, ${r.txHash},
                ${STANDARD[r.category]}, ${r.contract}, ${r.from}, ${r.to}, ${r.tokenId?.toString() ?? null},
                ${r.value.toString()})`,
          ),
        )}`.execute(db)
  }
}
