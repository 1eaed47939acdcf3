import { type Generated, type Kysely, sql } from 'kysely'
import type { Database } from '../storage/schema.ts'
import type { Address, Hash, Page } from '../types.ts'

export interface WalletsTable {
  network: string
  address: Address
  owner: Address
  salt: string
  factory: Address
  created_at: Generated<Date>
}

export interface WalletKeysTable {
  key_id: string
  network: string
  address: Address
  created_at: Generated<Date>
}

export interface WalletDeploymentsTable {
  network: string
  address: Address
  tx_hash: Hash | null
  block_number: string
  block_hash: Hash | null
  deployed_at: Date | null
  /** `entrypoint` (AccountDeployed), `proxy` (the proxy's own Upgraded log) or `code` (found by eth_getCode). */
  source: string
}

export interface WalletTables {
  wallets: WalletsTable
  wallet_keys: WalletKeysTable
  wallet_deployments: WalletDeploymentsTable
}

declare module '../storage/schema.ts' {
  interface Database extends WalletTables {}
}

type Db = Kysely<Database>

export interface WalletRow {
  network: string
  address: Address
  owner: Address
  salt: bigint
  factory: Address
  createdAt: Date
  deployment: Deployment | null
}

export interface Deployment {
  txHash: Hash | null
  blockNumber: bigint
  deployedAt: Date | null
}

export interface NewDeployment {
  network: string
  address: Address
  txHash: Hash | null
  blockNumber: bigint
  blockHash: Hash | null
  deployedAt: Date | null
  source: 'entrypoint' | 'proxy' | 'code'
}

/**
 * Creates the wallet if new and links it to the key, in one transaction. `linked` is false when
 * this key already had the wallet (a repeated create).
 */
export async function createWallet(
  db: Db,
  keyId: string,
  w: { network: string; address: Address; owner: Address; salt: bigint; factory: Address },
): Promise<{ linked: boolean }> {
  return db.transaction().execute(async (trx) => {
    await trx
      .insertInto('wallets')
      .values({
        network: w.network,
        address: w.address,
        owner: w.owner,
        salt: w.salt.toString(),
        factory: w.factory,
      })
      .onConflict((oc) => oc.columns(['network', 'address']).doNothing())
      .execute()
    const inserted = await trx
      .insertInto('wallet_keys')
      .values({ key_id: keyId, network: w.network, address: w.address })
      .onConflict((oc) => oc.columns(['key_id', 'network', 'address']).doNothing())
      .returning('address')
      .execute()
    return { linked: inserted.length > 0 }
  })
}

function walletQuery(db: Db, keyId: string) {
  return db
    .selectFrom('wallet_keys as k')
    .innerJoin('wallets as w', (j) =>
      j.onRef('w.network', '=', 'k.network').onRef('w.address', '=', 'k.address'),
    )
    .leftJoin('wallet_deployments as d', (j) =>
      j.onRef('d.network', '=', 'w.network').onRef('d.address', '=', 'w.address'),
    )
    .where('k.key_id', '=', keyId)
    .select([
      'w.network',
      'w.address',
      'w.owner',
      'w.salt',
      'w.factory',
      'w.created_at',
      'd.tx_hash',
      'd.block_number',
      'd.deployed_at',
    ])
}

type Selected = {
  network: string
  address: Address
  owner: Address
  salt: string
  factory: Address
  created_at: Date
  tx_hash: Hash | null
  block_number: string | null
  deployed_at: Date | null
}

function toRow(r: Selected): WalletRow {
  return {
    network: r.network,
    address: r.address,
    owner: r.owner,
    salt: BigInt(r.salt),
    factory: r.factory,
    createdAt: r.created_at,
    deployment:
      r.block_number === null
        ? null
        : {
            txHash: r.tx_hash,
            blockNumber: BigInt(r.block_number),
            deployedAt: r.deployed_at,
          },
  }
}

/** The key's wallets at `address`, on one network or (no `network`) on all, oldest link first. */
export async function walletsAt(
  db: Db,
  keyId: string,
  address: Address,
  network?: string,
): Promise<WalletRow[]> {
  let q = walletQuery(db, keyId).where('k.address', '=', address)
  if (network) q = q.where('k.network', '=', network)
  const rows = await q.orderBy('k.created_at').orderBy('k.network').execute()
  return rows.map(toRow)
}

/** One page of the key's wallets (oldest first), and how many there are in all. */
export async function listWallets(
  db: Db,
  keyId: string,
  page: Page,
  network?: string,
): Promise<{ rows: WalletRow[]; total: number }> {
  let q = walletQuery(db, keyId)
  let count = db.selectFrom('wallet_keys').where('key_id', '=', keyId).select(sql<string>`count(*)`.as('n'))
  if (network) {
    q = q.where('k.network', '=', network)
    count = count.where('network', '=', network)
  }
  const [rows, total] = await Promise.all([
    q
      .orderBy('k.created_at')
      .orderBy('k.network')
      .orderBy('k.address')
      .limit(page.limit)
      .offset((page.page - 1) * page.limit)
      .execute(),
    count.executeTakeFirstOrThrow(),
  ])
  return { rows: rows.map(toRow), total: Number(total.n) }
}

/** Which of `addresses` are wallets someone created on `network`. */
export async function knownWallets(
  db: Db,
  network: string,
  addresses: readonly Address[],
): Promise<Set<Address>> {
  if (addresses.length === 0) return new Set()
  const rows = await db
    .selectFrom('wallets')
    .select('address')
    .where('network', '=', network)
    .where('address', 'in', addresses)
    .execute()
  return new Set(rows.map((r) => r.address))
}

/** Records first deployments; an address already recorded keeps its earlier deployment. */
export async function saveDeployments(db: Db, rows: readonly NewDeployment[]): Promise<void> {
  if (rows.length === 0) return
  await db
    .insertInto('wallet_deployments')
    .values(
      rows.map((d) => ({
        network: d.network,
        address: d.address,
        tx_hash: d.txHash,
        block_number: d.blockNumber.toString(),
        block_hash: d.blockHash,
        deployed_at: d.deployedAt,
        source: d.source,
      })),
    )
    .onConflict((oc) => oc.columns(['network', 'address']).doNothing())
    .execute()
}

/** A reorg undid every block above `ancestor`: forget deployments seen in them. */
export async function rollbackDeployments(db: Db, network: string, ancestor: bigint): Promise<void> {
  await db
    .deleteFrom('wallet_deployments')
    .where('network', '=', network)
    .where('block_number', '>', ancestor.toString())
    .execute()
}
