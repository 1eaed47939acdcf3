import { randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import { failureMessage, getLogs, type Log, nodeError } from '../chains/reads.ts'
import type { Network } from '../chains/registry.ts'
import type { Logger } from '../logger.ts'
import type { Database } from '../storage/schema.ts'
import type { Address, Hex } from '../types.ts'
import { ChainReader } from './chain.ts'
import { decodeLog, TRANSFER_BATCH_TOPIC, TRANSFER_SINGLE_TOPIC, TRANSFER_TOPIC } from './decode.ts'
import {
  claimScan,
  commitWindow,
  openScan,
  pendingScans,
  readScan,
  releaseScan,
  type ScanClaim,
  type ScanRow,
} from './history-store.ts'
import { narrowedRange } from './range-hint.ts'
import type { StoredTransfer } from './store.ts'

/** Where an address's history scan stands, as the answers say it (`index.history_scan`). */
export type ScanState = 'done' | 'queued' | 'running' | 'refused'

export interface ScanLimits {
  concurrency: number
  maxQueued: number
  maxQueuedPerKey: number
  window: number
  /** How long a claim lasts past the scan's last window (instances sharing a database). */
  claimSeconds: number
}

export const DEFAULT_SCAN_LIMITS: ScanLimits = {
  concurrency: 2,
  maxQueued: 1000,
  maxQueuedPerKey: 20,
  window: 100_000,
  claimSeconds: 60,
}

/** A window with more logs than this is halved for the next one (memory, answer size). */
const MAX_LOGS_PER_WINDOW = 10_000
/** Finished scans remembered in memory per network (then forgotten all at once: reads again). */
const DONE_CACHE = 10_000
/** Block headers (timestamps) read at once when the node's logs carry no blockTimestamp. */
const HEADER_READS = 8

interface Job {
  address: Address
  owner: string
  running: boolean
  /** Settles when the job ends (done, failed or dropped at stop). */
  done: Promise<void>
  finish: () => void
}

/**
 * Targeted history scans of one network: when an answer is asked about an address whose
 * history is older than the index, eth_getLogs over [0, completeFrom) for the transfers it took
 * part in (ERC-20/721 Transfer with the address as from or to, ERC-1155 TransferSingle and
 * TransferBatch likewise), written into the index tables window by window, each window with the
 * scan's progress in one transaction (a restarted scan goes on from its last window). Bounded:
 * `concurrency` scans run, at most `maxQueued` wait, and one API key has at most
 * `maxQueuedPerKey` waiting or running; beyond that a request is refused (the answer says so)
 * rather than queued, so asking about many addresses costs the asker only the request charge.
 * Instances sharing a database scan an address once: the one running it claims it (extended
 * with each window); the others answer it as running, and take it over once the claim lapses
 * (on the next request for it, or the sweep every `claimSeconds`).
 */
export class HistoryScans {
  private readonly jobs = new Map<Address, Job>()
  private readonly queue: Job[] = []
  private readonly perOwner = new Map<string, number>()
  /** Addresses whose scan is done (a finished scan never changes): spares a read per answer. */
  private readonly done = new Set<Address>()
  private running = 0
  private stopped = false
  private readonly chain: ChainReader
  private readonly claim: ScanClaim
  private sweep: NodeJS.Timeout | undefined

  constructor(
    private readonly network: Network,
    private readonly db: Kysely<Database>,
    private readonly limits: ScanLimits,
    private readonly logger: Logger,
    /** Told the load (waiting, running) whenever it changes. */
    private readonly onLoad: (load: { queued: number; running: number }) => void = () => {},
  ) {
    this.chain = new ChainReader(network)
    this.claim = { by: randomUUID(), seconds: limits.claimSeconds }
  }

  /** Scans waiting and running in this process. */
  get load(): { queued: number; running: number } {
    return { queued: this.queue.length, running: this.running }
  }

  /**
   * The state of `address`'s scan below `completeFrom`, starting one when there is none (and
   * the bounds allow). `owner` names the asker for the per-key bound.
   */
  async request(address: Address, completeFrom: bigint, owner: string): Promise<ScanState> {
    if (this.done.has(address)) return 'done'
    const job = this.jobs.get(address)
    if (job) return job.running ? 'running' : 'queued'
    const row = await readScan(this.db, this.network.slug, address)
    if (row?.done) {
      this.remember(address)
      return 'done'
    }
    // Another instance runs it: it is under way, and nothing is queued here.
    if (row?.claimedBy && row.claimedBy !== this.claim.by) return 'running'
    if (this.stopped || this.limits.concurrency === 0) return 'refused'
    if (this.queue.length >= this.limits.maxQueued) return 'refused'
    if ((this.perOwner.get(owner) ?? 0) >= this.limits.maxQueuedPerKey) return 'refused'
    if (!row) await openScan(this.db, this.network.slug, address, completeFrom, owner)
    // Checked again after the await: a request for the same address may have queued it meanwhile.
    const queued = this.jobs.get(address)
    if (queued) return queued.running ? 'running' : 'queued'
    this.enqueue(address, owner)
    return 'queued'
  }

  /** Resolves when the scan of `address` running or queued here has ended (at once if none). */
  settled(address: Address): Promise<void> {
    return this.jobs.get(address)?.done ?? Promise.resolve()
  }

  /**
   * Queues the unfinished scans no instance holds (a previous run's, or a stopped instance's
   * once its claim lapsed), up to the queue bound; then again every `claimSeconds`.
   */
  async resume(): Promise<void> {
    await this.takeOver()
    if (this.sweep || this.stopped) return
    this.sweep = setInterval(() => {
      this.takeOver().catch((err) =>
        this.logger.warn(
          { network: this.network.slug, err: (err as Error).message },
          'history scan sweep failed',
        ),
      )
    }, this.limits.claimSeconds * 1000)
    this.sweep.unref()
  }

  private async takeOver(): Promise<void> {
    const room = this.limits.maxQueued - this.queue.length
    if (room <= 0 || this.stopped) return
    const rows = await pendingScans(this.db, this.network.slug, room)
    for (const r of rows) if (!this.jobs.has(r.address) && !this.stopped) this.enqueue(r.address, 'resumed')
  }

  stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.sweep)
    for (const j of this.queue.splice(0)) j.finish()
    return Promise.allSettled([...this.jobs.values()].map((j) => j.done)).then(() => {})
  }

  private remember(address: Address): void {
    if (this.done.size >= DONE_CACHE) this.done.clear()
    this.done.add(address)
  }

  private enqueue(address: Address, owner: string): void {
    let finish = () => {}
    const done = new Promise<void>((r) => {
      finish = r
    })
    const job: Job = { address, owner, running: false, done, finish }
    job.done.then(() => {
      this.jobs.delete(address)
      const n = (this.perOwner.get(owner) ?? 1) - 1
      if (n <= 0) this.perOwner.delete(owner)
      else this.perOwner.set(owner, n)
    })
    this.jobs.set(address, job)
    this.perOwner.set(owner, (this.perOwner.get(owner) ?? 0) + 1)
    this.queue.push(job)
    this.pump()
  }

  private pump(): void {
    while (!this.stopped && this.running < this.limits.concurrency && this.queue.length > 0) {
      const job = this.queue.shift() as Job
      job.running = true
      this.running++
      this.scan(job.address)
        .catch((err) =>
          // The row stays unfinished: the next request (or the next start) picks it up again.
          this.logger.warn(
            { network: this.network.slug, address: job.address, err: (err as Error).message },
            'history scan failed; it resumes on the next request',
          ),
        )
        .finally(() => {
          this.running--
          job.finish()
          this.pump()
        })
    }
    // Stopped: whatever is still queued ends without running.
    if (this.stopped) for (const j of this.queue.splice(0)) j.finish()
    this.onLoad(this.load)
  }

  private async scan(address: Address): Promise<void> {
    const slug = this.network.slug
    // Claimed by another instance meanwhile (or finished): it runs there.
    if (!(await claimScan(this.db, slug, address, this.claim))) return
    try {
      await this.scanClaimed(address)
    } finally {
      // Done, stopped or failed: whatever is left may be taken at once, here or elsewhere.
      await releaseScan(this.db, slug, address, this.claim.by).catch(() => {})
    }
  }

  private async scanClaimed(address: Address): Promise<void> {
    const slug = this.network.slug
    let row: ScanRow | null = await readScan(this.db, slug, address)
    let window = BigInt(this.limits.window)
    const started = Date.now()
    while (row && !row.done && !this.stopped) {
      const from = row.nextBlock
      const to = from + window - 1n < row.endBlock - 1n ? from + window - 1n : row.endBlock - 1n
      let logs: Log[]
      try {
        logs = await this.logsOf(address, from, to)
      } catch (err) {
        const next = narrowerWindow(from, to, err)
        if (!next) throw err
        window = next
        continue
      }
      if (logs.length > MAX_LOGS_PER_WINDOW && window > 1n) window /= 2n
      const transfers = await this.transfersOf(address, logs)
      const committed = await commitWindow(this.db, slug, address, from, to, transfers, this.claim)
      // Not committed: another instance moved the scan on; read where it stands now.
      row = committed
        ? { ...row, nextBlock: to + 1n, done: to + 1n >= row.endBlock }
        : await readScan(this.db, slug, address)
    }
    if (row?.done) {
      this.remember(address)
      this.logger.info(
        { network: slug, address, endBlock: row.endBlock.toString(), ms: Date.now() - started },
        'history scan done',
      )
    }
  }

  /** Every log of a transfer event with `address` as sender or recipient in [from, to], once each. */
  private async logsOf(address: Address, from: bigint, to: bigint): Promise<Log[]> {
    const topic = `0x${address.slice(2).padStart(64, '0')}` as Hex
    const multi = [TRANSFER_SINGLE_TOPIC, TRANSFER_BATCH_TOPIC] as Hex[]
    const filters: (Hex | readonly Hex[] | null)[][] = [
      [TRANSFER_TOPIC as Hex, topic],
      [TRANSFER_TOPIC as Hex, null, topic],
      [multi, null, topic],
      [multi, null, null, topic],
    ]
    const answers = await Promise.all(
      filters.map((topics) => getLogs(this.network, { topics, fromBlock: from, toBlock: to })),
    )
    const seen = new Map<string, Log>()
    for (const l of answers.flat()) if (!l.removed) seen.set(`${l.blockNumber}:${l.logIndex}`, l)
    return [...seen.values()]
  }

  private async transfersOf(address: Address, logs: Log[]): Promise<StoredTransfer[]> {
    const stamps = await this.timestamps(logs)
    const out: StoredTransfer[] = []
    for (const l of logs) {
      const decoded = decodeLog({
        address: l.address,
        topics: l.topics,
        data: l.data,
        txHash: l.transactionHash,
        logIndex: Number(l.logIndex),
      })
      // A log that fits no standard is skipped here as the indexer skips it (counted there).
      if (!decoded.ok) continue
      for (const t of decoded.transfers) {
        if (t.from !== address && t.to !== address) continue
        out.push({
          ...t,
          blockNumber: l.blockNumber,
          blockHash: l.blockHash,
          timestamp: stamps.get(l.blockNumber) ?? 0,
        })
      }
    }
    return out.sort((a, b) =>
      a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1,
    )
  }

  /** Block timestamps: from the logs when the node sends them, else from the headers. */
  private async timestamps(logs: Log[]): Promise<Map<bigint, number>> {
    const out = new Map<bigint, number>()
    const missing = new Set<bigint>()
    for (const l of logs) {
      if (l.blockTimestamp !== undefined) out.set(l.blockNumber, Number(l.blockTimestamp))
      else missing.add(l.blockNumber)
    }
    const todo = [...missing].filter((b) => !out.has(b))
    for (let i = 0; i < todo.length; i += HEADER_READS) {
      const part = todo.slice(i, i + HEADER_READS)
      const headers = await Promise.all(part.map((b) => this.chain.header(b)))
      headers.forEach((h, j) => {
        if (!h) throw new Error(`the node does not have block ${part[j]}`)
        out.set(h.number, h.timestamp)
      })
    }
    return out
  }
}

/**
 * The next window after the node refused [from, to] (too wide, too many results, a timeout):
 * the range or width its error names (range-hint.ts), else half; null at one block.
 */
export function narrowerWindow(from: bigint, to: bigint, err: unknown): bigint | null {
  const node = nodeError(err)
  const said = node?.data === undefined ? failureMessage(err) : `${node.message} ${JSON.stringify(node.data)}`
  const next = narrowedRange(said, from, to)
  return next ? next.to - next.from + 1n : null
}
