import { readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from 'hyparquet'
import { invalidRequest } from '../../errors.ts'
import type { Hash } from '../../types.ts'
import type { ChainLog } from '../chain.ts'
import type { InternalTransfer } from '../traces.ts'
import type { IndexedTransaction } from '../types.ts'
import { CRYO_COLUMNS, type CryoTrace, cryoBlock, cryoLog, cryoTrace, cryoTransaction } from './cryo-rows.ts'
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
      yield* await this.assemble(lo, hi, traced)
    }
  }

  /** Blocks lo..hi with their transactions, logs and traces, in order. */
  private async assemble(lo: bigint, hi: bigint, traced: boolean): Promise<BulkBlock[]> {
    // Blocks by number as a plain number (a chunk is a few thousand blocks at most): bigint map
    // keys cost a hash of the bigint on every one of the chunk's rows.
    const base = lo
    const count = Number(hi - lo) + 1
    const out: (BulkBlock | undefined)[] = new Array(count)
    const slot = (n: bigint) => (n >= lo && n <= hi ? Number(n - base) : -1)
    const blockRows = await this.rows('blocks', lo, hi)
    for (let i = 0; i < blockRows.length; i++) {
      const b = cryoBlock(blockRows[i] as Record<string, unknown>, { dataset: 'blocks', row: i })
      const k = slot(b.number)
      if (k < 0) continue
      const header = {
        number: b.number,
        hash: b.hash,
        parentHash: b.parentHash,
        timestamp: b.timestamp,
        transactions: [] as IndexedTransaction[],
        transactionCount: 0,
        ...(b.gasUsed === undefined ? {} : { gasUsed: b.gasUsed }),
      }
      out[k] = { header, logs: [], internal: traced ? [] : undefined }
    }
    for (let k = 0; k < count; k++)
      if (out[k] === undefined)
        throw invalidRequest(`block ${base + BigInt(k)} is missing from the blocks files`)
    const at = (k: number, n: bigint, what: string) => {
      const b = out[k]
      if (!b) throw invalidRequest(`${what} of block ${n}, which the blocks files do not hold`)
      return b
    }
    const txRows = await this.rows('transactions', lo, hi)
    for (let i = 0; i < txRows.length; i++) {
      const { block, tx } = cryoTransaction(txRows[i] as Record<string, unknown>, {
        dataset: 'transactions',
        row: i,
      })
      const k = slot(block)
      if (k >= 0) at(k, block, 'a transaction').header.transactions?.push(tx)
    }
    const logRows = await this.rows('logs', lo, hi)
    for (let i = 0; i < logRows.length; i++) {
      const { block, log } = cryoLog(logRows[i] as Record<string, unknown>, { dataset: 'logs', row: i })
      const k = slot(block)
      if (k < 0) continue
      const b = at(k, block, 'a log')
      b.logs.push({
        address: log.address,
        topics: log.topics,
        data: log.data,
        txHash: log.txHash,
        logIndex: log.logIndex,
        blockNumber: log.blockNumber,
        blockHash: b.header.hash,
        blockTimestamp: b.header.timestamp,
      } satisfies ChainLog)
    }
    if (traced) {
      const byBlock = new Map<number, CryoTrace[]>()
      const traceRows = await this.rows('traces', lo, hi)
      for (let i = 0; i < traceRows.length; i++) {
        const t = cryoTrace(traceRows[i] as Record<string, unknown>, { dataset: 'traces', row: i })
        const k = slot(t.block)
        if (k < 0) continue
        at(k, t.block, 'a trace')
        const list = byBlock.get(k)
        if (list) list.push(t)
        else byBlock.set(k, [t])
      }
      for (const [k, list] of byBlock) (out[k] as BulkBlock).internal = internalOf(list)
    }
    const blocks = out as BulkBlock[]
    for (const b of blocks) {
      b.header.transactions?.sort((x, y) => x.index - y.index)
      b.header.transactionCount = b.header.transactions?.length ?? 0
      b.logs.sort((x, y) => x.logIndex - y.logIndex)
    }
    return blocks
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
