import { type Kysely, type RawBuilder, sql } from 'kysely'
import type { Database } from './schema.ts'

/**
 * Network slugs as small integers (table `networks`, migration 0160): a row of the index tables
 * carries the 2-byte id, not the slug text. Ids are assigned on first write and never change.
 */

export interface NetworksTable {
  id: number
  slug: string
}

declare module './schema.ts' {
  interface Database {
    networks: NetworksTable
  }
}

/** The id of `slug` as a SQL expression, for readers: null (no rows match) when never written. */
export function networkIdOf(slug: string): RawBuilder<number> {
  return sql<number>`(select id from networks where slug = ${slug})`
}

// Per connection or transaction object: an id inserted inside a transaction that rolls back is
// forgotten with the transaction object.
const cache = new WeakMap<object, Map<string, number>>()

/** The id of `slug`, assigned now when it has none (for writers). */
export async function ensureNetworkId(db: Kysely<Database>, slug: string): Promise<number> {
  const known = cache.get(db)?.get(slug)
  if (known !== undefined) return known
  let id: number | undefined
  // A concurrent first write of the same slug can hide the row from this statement's snapshot:
  // the second round reads it committed.
  for (let round = 0; round < 2 && id === undefined; round++) {
    const { rows } = await sql<{ id: number }>`
      with ins as (insert into networks (slug) values (${slug}) on conflict (slug) do nothing returning id)
      select id from ins union all select id from networks where slug = ${slug}`.execute(db)
    id = rows[0] === undefined ? undefined : Number(rows[0].id)
  }
  if (id === undefined) throw new Error(`no network id for ${slug}`)
  remember(db, slug, id)
  return id
}

/**
 * The id of `slug`, or null when nothing was ever written for it (for readers that want the id
 * as a constant in their SQL, where the planner can use it with the column statistics).
 */
export async function lookupNetworkId(db: Kysely<Database>, slug: string): Promise<number | null> {
  const known = cache.get(db)?.get(slug)
  if (known !== undefined) return known
  const row = await db.selectFrom('networks').select('id').where('slug', '=', slug).executeTakeFirst()
  if (!row) return null
  remember(db, slug, Number(row.id))
  return Number(row.id)
}

function remember(db: object, slug: string, id: number): void {
  const m = cache.get(db) ?? new Map<string, number>()
  cache.set(db, m)
  m.set(slug, id)
}
