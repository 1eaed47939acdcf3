import { type RawBuilder, sql } from 'kysely'

/**
 * `column = any(values)`: a text column in a list. An empty list matches nothing, where
 * kysely's `in` would write `in ()`, which PostgreSQL refuses.
 */
export function inList(column: string, values: readonly string[]): RawBuilder<boolean> {
  return sql<boolean>`${sql.ref(column)} = any(${[...values]}::text[])`
}
