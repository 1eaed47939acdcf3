/**
 * A PostgreSQL array literal (`{1,2,3}`) of integers, for an `unnest` parameter cast to
 * `bigint[]`, `integer[]`, `smallint[]` or `numeric[]`. node-postgres formats a JS array
 * element by element, quoting and escaping each one with two regular expressions; integers
 * need neither, and a bulk write sends hundreds of thousands of them (src/indexer/store.ts).
 * PGlite takes the same text.
 */
export function intArray(values: readonly (number | bigint)[]): string {
  for (const v of values)
    if (typeof v === 'number' && !Number.isSafeInteger(v)) throw new Error(`not an integer: ${v}`)
  return `{${values.join(',')}}`
}
