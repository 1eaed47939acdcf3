/**
 * The `internal_transfer` webhook kind reads the same traces as the indexer's native_transfers
 * (one source): the reader lives in src/indexer/traces.ts, and the matcher takes a
 * block's internal transfers from the indexer when it traced the block (matcher.ts).
 */
export { type InternalTransfer, TraceReader } from '../indexer/traces.ts'
