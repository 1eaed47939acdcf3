import type { Kysely } from 'kysely'
import type { Network } from '../chains/registry.ts'
import type { Logger } from '../logger.ts'
import type { Metrics } from '../metrics.ts'
import type { Database } from '../storage/schema.ts'
import type { Address } from '../types.ts'
import { ChainReader } from './chain.ts'
import { DEFAULT_SCAN_LIMITS, HistoryScans, type ScanState } from './history-scan.ts'
import { lowestIndexedBlock, readCompleteFrom, recordCompleteFrom, scanCounts } from './history-store.ts'
import type { Cursor } from './store.ts'

/** `indexer.history` of a network: where its index starts at first start. */
export type HistoryChoice = { kind: 'genesis' } | { kind: 'head' } | { kind: 'block'; block: bigint }

/**
 * The network's history choice: `history`, else its deprecated alias `startBlock`, else
 * genesis — on every network: indexing from now on (`head`) is only ever an explicit choice.
 */
export function historyChoice(network: Network): HistoryChoice {
  const cfg = network.config.indexer
  const h = cfg?.history ?? cfg?.startBlock
  if (h === undefined || h === 'genesis') return { kind: 'genesis' }
  if (h === 'head') return { kind: 'head' }
  return { kind: 'block', block: BigInt(h) }
}

/**
 * The first block to index when there is no cursor yet, recorded durably as the block the
 * index is complete from (a value recorded before wins: the index was started from there).
 */
export async function startBlock(db: Kysely<Database>, network: Network): Promise<bigint> {
  const recorded = await readCompleteFrom(db, network.slug)
  if (recorded !== null) return recorded
  const choice = historyChoice(network)
  let start = 0n
  if (choice.kind === 'block') start = choice.block
  else if (choice.kind === 'head') {
    start = (await new ChainReader(network).blockNumber()) - BigInt(network.config.confirmations)
    if (start < 0n) start = 0n
  }
  return recordCompleteFrom(db, network.slug, start)
}

/**
 * An index that has a cursor but no recorded start (it predates the record): its configured
 * start when the earlier default is certain (a `startBlock`, or a devnet's genesis), else the
 * lowest block it holds a transfer of — a block it is surely complete from.
 */
export async function recordExistingStart(
  db: Kysely<Database>,
  network: Network,
  cursor: Cursor,
): Promise<bigint> {
  const recorded = await readCompleteFrom(db, network.slug)
  if (recorded !== null) return recorded
  const cfg = network.config.indexer
  const known =
    cfg?.startBlock !== undefined
      ? BigInt(cfg.startBlock)
      : network.isDevnet && cfg?.history === undefined
        ? 0n
        : null
  const start = known ?? (await lowestIndexedBlock(db, network.slug)) ?? cursor.number + 1n
  return recordCompleteFrom(db, network.slug, start)
}

/** What an answer about one address can say of the index behind it (`index` in the JSON). */
export interface Coverage {
  /** The first block the answer's data is complete from; null before the index has started. */
  completeFrom: bigint | null
  /** The last block indexed (the cursor); null before the first block. */
  indexedTo: bigint | null
  /** Blocks below completeFrom may hold data the answer lacks. */
  partial: boolean
  /** The address's history scan: not_needed when the index itself starts at genesis. */
  scan: ScanState | 'not_needed'
}

export interface IndexHistoryOptions {
  db: Kysely<Database>
  logger: Logger
  cursor: (slug: string) => Promise<Cursor | null>
  /** The scans gauge (src/metrics.ts); none in bare tests. */
  metrics?: Metrics
}

/**
 * From which block each network's index is complete, and per address whether a history scan
 * has made it complete from genesis (starting the scan when not). The recorded start never
 * changes once written, so it is read once per network.
 */
export class IndexHistory {
  private readonly recorded = new Map<string, bigint>()
  private readonly scans = new Map<string, HistoryScans>()

  constructor(private readonly opts: IndexHistoryOptions) {}

  /** The network's scans (created on first use, with its `indexer.historyScans` limits). */
  scansOf(network: Network): HistoryScans {
    let s = this.scans.get(network.slug)
    if (!s) {
      const limits = { ...DEFAULT_SCAN_LIMITS, ...network.config.indexer?.historyScans }
      const gauge = this.opts.metrics?.historyScans
      const slug = network.slug
      s = new HistoryScans(network, this.opts.db, limits, this.opts.logger.child({ network: slug }), (l) => {
        gauge?.set({ network: slug, state: 'queued' }, l.queued)
        gauge?.set({ network: slug, state: 'running' }, l.running)
      })
      this.scans.set(network.slug, s)
    }
    return s
  }

  /** The block the network's index is complete from, or null before it started. */
  async completeFrom(slug: string): Promise<bigint | null> {
    const known = this.recorded.get(slug)
    if (known !== undefined) return known
    const read = await readCompleteFrom(this.opts.db, slug)
    if (read !== null) this.recorded.set(slug, read)
    return read
  }

  /** The network's own coverage (no address: nothing scanned). */
  async ofNetwork(network: Network): Promise<Coverage> {
    const [completeFrom, cursor] = await Promise.all([
      this.completeFrom(network.slug),
      this.opts.cursor(network.slug),
    ])
    return {
      completeFrom,
      indexedTo: cursor?.number ?? null,
      partial: completeFrom === null || completeFrom > 0n,
      scan: 'not_needed',
    }
  }

  /**
   * Coverage of the token data (transfers and holdings) of `address`, asked by `owner` (an API
   * key): complete from genesis once its scan is done; otherwise the scan is started (within
   * the bounds) and the answer is partial. Native transfers cannot be found by log filters:
   * an answer that includes them (`native`) stays complete from the network's start only.
   */
  async ofAddress(
    network: Network,
    address: Address,
    owner: string,
    opts: { native?: boolean } = {},
  ): Promise<Coverage> {
    const net = await this.ofNetwork(network)
    if (net.completeFrom === null || net.completeFrom === 0n) return net
    const scan = await this.scansOf(network).request(address, net.completeFrom, owner)
    if (scan === 'done' && !opts.native) return { ...net, completeFrom: 0n, partial: false, scan }
    return { ...net, scan }
  }

  /** The `/ready` line: where the index is complete from, how far it is, and the scans. */
  async describe(network: Network): Promise<string> {
    const c = await this.ofNetwork(network)
    if (c.completeFrom === null) return 'not started'
    const counts = await scanCounts(this.opts.db, network.slug)
    const load = this.scansOf(network).load
    const to = c.indexedTo === null ? 'nothing indexed yet' : `indexed to block ${c.indexedTo}`
    return (
      `complete from block ${c.completeFrom}, ${to}; address history scans: ${counts.done} done, ` +
      `${counts.pending} unfinished (${load.running} running, ${load.queued} queued here)`
    )
  }

  /** Picks up the scans a previous run left unfinished. */
  async resume(networks: readonly Network[]): Promise<void> {
    for (const n of networks) {
      if (((await this.completeFrom(n.slug)) ?? 0n) === 0n) continue
      await this.scansOf(n).resume()
    }
  }

  stop(): Promise<void> {
    return Promise.all([...this.scans.values()].map((s) => s.stop())).then(() => {})
  }
}
