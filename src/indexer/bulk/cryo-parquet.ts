import { readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from 'hyparquet'
import { invalidRequest } from '../../errors.ts'
import type { Hash } from '../../types.ts'
import type { InternalTransfer } from '../traces.ts'
import type { IndexedTransaction } from '../types.ts'
import {
  CRYO_COLUMNS,
  type CryoTrace,
  cryoBlock,
  cryoBlockNumber,
  cryoLog,
  cryoTrace,
  cryoTransaction,
  type RowAt,
} from './cryo-rows.ts'
import type { BulkBlock, BulkSource } from './source.ts'

/**
 * Parquet files laid out as cryo (paradigmxyz/cryo) writes them: `<chain>__<dataset>__<first>_to_<last>.parquet`,
 * in one folder per dataset (blocks/, transactions/, logs/, traces/) or all in one folder.
 * blocks, transactions and logs are required over the whole range; traces are optional (without
 * them blocks carry no internal transfers, as when the node does not trace).
 */

type Dataset = 'blocks' | 'transactions' | 'logs' | 'traces'
const DATASETS: readonly Dataset[] = ['blocks', 'transactions', 'logs', 'traces']
const FILE = /^[A-Za-z0-9_.-]+?__([a-z0-9_]+)__(\d+)_to_(\d+)\.parquet$/

interface Chunk {
  file: string
  from: bigint
  to: bigint
}

export class CryoParquetSource implements BulkSource {
  private readonly cache = new Map<Dataset, { file: string; rows: Record<string, unknown>[] }>()

  private constructor(
    private readonly chunks: ReadonlyMap<Dataset, Chunk[]>,
    private readonly span: { from: bigint; to: bigint },
  ) {}

  /** Finds the files under `dir`; refuses a layout with gaps or without a required dataset. */
  static open(dir: string): CryoParquetSource {
    const chunks = new Map<Dataset, Chunk[]>(DATASETS.map((d) => [d, []]))
    const scan = (folder: string, depth: number) => {
      let names: string[]
      try {
        names = readdirSync(folder)
      } catch (err) {
        throw invalidRequest(`cannot read ${folder}: ${(err as Error).message}`)
      }
      for (const name of names) {
        const full = path.join(folder, name)
        if (depth === 0 && statSync(full).isDirectory()) {
          scan(full, 1)
          continue
        }
        const m = FILE.exec(name)
        if (!m) continue
        const list = chunks.get(m[1] as Dataset)
        if (list) list.push({ file: full, from: BigInt(m[2] as string), to: BigInt(m[3] as string) })
      }
    }
    scan(dir, 0)
    for (const list of chunks.values()) list.sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0))
    const blocks = chunks.get('blocks') ?? []
    if (blocks.length === 0)
      throw invalidRequest(`no cryo blocks files (…__blocks__N_to_M.parquet) under ${dir}`)
    const span = { from: (blocks[0] as Chunk).from, to: (blocks.at(-1) as Chunk).to }
    for (const d of ['blocks', 'transactions', 'logs'] as const) {
      const gap = firstGap(chunks.get(d) ?? [], span.from, span.to)
      if (gap !== undefined) throw invalidRequest(`${d} files under ${dir} do not cover block ${gap}`)
    }
    const traces = chunks.get('traces') ?? []
    if (traces.length > 0 && firstGap(traces, span.from, span.to) !== undefined)
      throw invalidRequest(`traces files under ${dir} cover only part of blocks ${span.from}..${span.to}`)
    return new CryoParquetSource(chunks, span)
  }

  range(): { from: bigint; to: bigint } {
    return { ...this.span }
  }

  async *blocks(from: bigint, to: bigint): AsyncIterable<BulkBlock> {
    if (from < this.span.from || to > this.span.to || from > to)
      throw invalidRequest(`blocks ${from}..${to} are outside ${this.span.from}..${this.span.to}`)
    const traced = (this.chunks.get('traces') ?? []).length > 0
    for (const chunk of this.chunks.get('blocks') ?? []) {
      if (chunk.to < from || chunk.from > to) continue
      const lo = chunk.from > from ? chunk.from : from
      const hi = chunk.to < to ? chunk.to : to
      const part = await this.load(lo, hi, traced)
      for (let k = 0; k < part.count; k++) yield part.block(k)
    }
  }

  /**
   * Blocks lo..hi: the files' rows are read and grouped by block at once, but a block's rows
   * are checked and converted only when it is taken, so a caller writing blocks as they come
   * (the import) has the database write one batch while this converts the next, rather than
   * waiting for a whole file's conversion (docs/benchmarks.md).
   */
  private async load(lo: bigint, hi: bigint, traced: boolean): Promise<Part> {
    // Blocks by number as a plain number (a chunk is a few thousand blocks at most): bigint map
    // keys cost a hash of the bigint on every one of the chunk's rows.
    const count = Number(hi - lo) + 1
    const headers: (BulkBlock['header'] | undefined)[] = new Array(count)
    const blockRows = await this.rows('blocks', lo, hi)
    const blockAt: RowAt = { dataset: 'blocks', row: 0 }
    for (let i = 0; i < blockRows.length; i++) {
      blockAt.row = i
      const b = cryoBlock(blockRows[i] as Row, blockAt)
      if (b.number < lo || b.number > hi) continue
      headers[Number(b.number - lo)] = {
        number: b.number,
        hash: b.hash,
        parentHash: b.parentHash,
        timestamp: b.timestamp,
        transactions: [] as IndexedTransaction[],
        transactionCount: 0,
        ...(b.gasUsed === undefined ? {} : { gasUsed: b.gasUsed }),
      }
    }
    for (let k = 0; k < count; k++)
      if (headers[k] === undefined)
        throw invalidRequest(`block ${lo + BigInt(k)} is missing from the blocks files`)
    const txs = byBlock(await this.rows('transactions', lo, hi), 'transactions', lo, count)
    const logs = byBlock(await this.rows('logs', lo, hi), 'logs', lo, count)
    const traces = traced ? byBlock(await this.rows('traces', lo, hi), 'traces', lo, count) : undefined
    const block = (k: number): BulkBlock => {
      const header = headers[k] as BulkBlock['header']
      const list = header.transactions as IndexedTransaction[]
      txs.each(k, (r, at) => list.push(cryoTransaction(r, at).tx))
      list.sort((x, y) => x.index - y.index)
      header.transactionCount = list.length
      const out: BulkBlock = { header, logs: [], internal: undefined }
      logs.each(k, (r, at) => {
        const log = cryoLog(r, at, header)
        if (log) out.logs.push(log)
      })
      out.logs.sort((x, y) => x.logIndex - y.logIndex)
      if (traces) {
        const frames: CryoTrace[] = []
        traces.each(k, (r, at) => frames.push(cryoTrace(r, at)))
        out.internal = internalOf(frames)
      }
      return out
    }
    return { count, block }
  }

  /** Rows of every file of `dataset` overlapping lo..hi (the last file read is kept). */
  private async rows(dataset: Dataset, lo: bigint, hi: bigint): Promise<Record<string, unknown>[]> {
    const out: Record<string, unknown>[] = []
    for (const c of this.chunks.get(dataset) ?? []) {
      if (c.to < lo || c.from > hi) continue
      const hit = this.cache.get(dataset)
      if (hit?.file === c.file) {
        for (const r of hit.rows) out.push(r)
        continue
      }
      let rows: Record<string, unknown>[]
      try {
        const file = await asyncBufferFromFile(c.file)
        // utf8 off: cryo's binary columns (hashes, addresses) stay bytes; its string columns
        // are marked as strings and still decode as text.
        const metadata = await parquetMetadataAsync(file)
        // Only the columns the row readers use: calldata, gas prices, signatures… are never decoded.
        const present = new Set(parquetSchema(metadata).children.map((c) => c.element.name))
        const columns = CRYO_COLUMNS[dataset].filter((c) => present.has(c))
        rows = (await parquetReadObjects({ file, metadata, columns, utf8: false })) as Record<
          string,
          unknown
        >[]
      } catch (err) {
        throw invalidRequest(`cannot read ${c.file}: ${(err as Error).message}`)
      }
      this.cache.set(dataset, { file: c.file, rows })
      for (const r of rows) out.push(r)
    }
    return out
  }
}

type Row = Record<string, unknown>

/** A chunk's blocks, each converted when taken (index 0 is the chunk's first block). */
interface Part {
  count: number
  block(k: number): BulkBlock
}

/** A dataset's rows grouped by block, in file order within a block; rows outside the chunk dropped. */
interface ByBlock {
  /** Calls `f` on block k's rows; `at` names the row (one object, updated, not one per row). */
  each(k: number, f: (r: Row, at: RowAt) => void): void
}

function byBlock(rows: Row[], dataset: Dataset, lo: bigint, count: number): ByBlock {
  // A counting sort by block: cryo writes rows in block order, but nothing here relies on it.
  const at: RowAt = { dataset, row: 0 }
  const slots = new Int32Array(rows.length)
  const start = new Int32Array(count + 1)
  for (let i = 0; i < rows.length; i++) {
    at.row = i
    const n = cryoBlockNumber(rows[i] as Row, at)
    const k = n >= lo && n - lo < BigInt(count) ? Number(n - lo) : -1
    slots[i] = k
    if (k >= 0) (start[k + 1] as number)++
  }
  for (let k = 0; k < count; k++) (start[k + 1] as number) += start[k] as number
  const fill = start.slice(0, count)
  const order = new Int32Array(start[count] as number)
  for (let i = 0; i < rows.length; i++) {
    const k = slots[i] as number
    if (k >= 0) order[(fill[k] as number)++] = i
  }
  return {
    each(k, f) {
      for (let j = start[k] as number; j < (start[k + 1] as number); j++) {
        at.row = order[j] as number
        f(rows[at.row] as Row, at)
      }
    },
  }
}

/** The first block of from..to that no chunk covers, or undefined. */
function firstGap(chunks: readonly Chunk[], from: bigint, to: bigint): bigint | undefined {
  let next = from
  for (const c of chunks) {
    if (c.from > next) return next
    if (c.to + 1n > next) next = c.to + 1n
    if (next > to) return undefined
  }
  return next <= to ? next : undefined
}

/** A block's internal transfers: frames under a reverted one moved nothing; depth-first per transaction. */
function internalOf(traces: CryoTrace[]): InternalTransfer[] {
  const key = (t: CryoTrace, n: number) => `${t.txHash}:${t.path.slice(0, n).join('.')}`
  const reverted = new Set<string>()
  for (const t of traces) if (t.error) reverted.add(key(t, t.path.length))
  const kept = traces.filter((t) => {
    if (!t.txHash || t.error || !t.transfer) return false
    for (let n = 0; n < t.path.length; n++) if (reverted.has(key(t, n))) return false
    return true
  })
  kept.sort((a, b) => a.txPosition - b.txPosition || comparePaths(a.path, b.path))
  return kept.map((t) => ({
    ...(t.transfer as NonNullable<CryoTrace['transfer']>),
    txHash: t.txHash as Hash,
    path: t.path,
  }))
}

function comparePaths(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++)
    if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number)
  return a.length - b.length
}
