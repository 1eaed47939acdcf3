import { type BackgroundLoop, periodicLoop } from '../common/background-loop.ts'
import { oneAtATime } from '../common/one-at-a-time.ts'
import type { Logger } from '../logger.ts'
import type { DB } from '../storage/database.ts'
import { utcDay } from '../usage/service.ts'
import { buildRows, type GatewayExchange, itemsOf } from './rows.ts'
import { addKeyUsage, insertRequests, type KeyUsageDelta, type RequestRow } from './store.ts'

export type { GatewayExchange } from './rows.ts'

/** How often a process writes what it kept and counted (also on shutdown). */
export const DEFAULT_REQUEST_FLUSH_MS = 2_000
/**
 * Calls of one account kept in detail per flush; past it they are only counted. Writing a kept
 * row is the recorder's dearest step (bench:request-log: ~0.1–0.2 ms a row into an embedded
 * PGlite, in the serving process), so the budget, not the request rate, bounds that work.
 */
export const DEFAULT_ACCOUNT_BUDGET = 200
/** Calls kept per flush, all accounts together: bounds the writes whatever the number of accounts. */
export const DEFAULT_TOTAL_BUDGET = 1_000
/** Rows waiting for a flush, all accounts together (a failing database holds them). */
const MAX_PENDING_ROWS = 50_000

export interface RequestRecorderOptions {
  readonly flushMs?: number
  readonly accountBudget?: number
  readonly totalBudget?: number
  /** A method's bounded label for the per-key counts (the registry's; unknown names: "other"). */
  readonly label: (exchange: GatewayExchange, method: string) => string
  readonly now?: () => number
}

interface Counter {
  calls: number
  computeUnits: number
  errors: number
  limited: number
}

/** key id → method label → counts, for one UTC day. */
interface DayCounts {
  readonly day: string
  readonly keys: Map<string, { accountId: string; methods: Map<string, Counter> }>
}

/**
 * The request explorer's recorder. Every gateway request is `record`ed once its answer is known:
 *
 * - counted, per key, UTC day and method (calls, compute units, errors, 429s): two Map lookups per
 *   call, every call, so per-key usage is exact;
 * - kept in detail (time, key, surface, network, method, status or JSON-RPC code, latency, CU,
 *   request id, params and answer redacted and capped: redact.ts) while its account has budget
 *   left in this flush interval (DEFAULT_ACCOUNT_BUDGET calls, DEFAULT_TOTAL_BUDGET for all
 *   accounts together). Past the budget a call costs the
 *   counting only, so the recorder's work under load is bounded per interval, not per request:
 *   the hot path's cost stays flat however fast requests come (bench:rpc, recording on and off).
 *
 * Every DEFAULT_REQUEST_FLUSH_MS the kept rows go to the database in multi-row inserts and the
 * counts in one upsert per (key, day, method): no write per request. A flush that fails keeps its
 * rows (up to MAX_PENDING_ROWS, oldest dropped first) and counts for the next one.
 */
export class RequestRecorder {
  private rows: RequestRow[] = []
  private spent = new Map<string, number>()
  private spentTotal = 0
  private counts: DayCounts
  private carried: KeyUsageDelta[] = []
  private loop: BackgroundLoop | undefined
  private readonly budget: number
  private readonly totalBudget: number
  private readonly now: () => number
  /** Calls kept and calls past their account's budget since start (tests, diagnostics). */
  kept = 0
  skipped = 0

  constructor(
    private readonly db: DB,
    private readonly logger: Logger,
    private readonly opts: RequestRecorderOptions,
  ) {
    this.budget = opts.accountBudget ?? DEFAULT_ACCOUNT_BUDGET
    this.totalBudget = opts.totalBudget ?? DEFAULT_TOTAL_BUDGET
    this.now = opts.now ?? Date.now
    this.counts = { day: utcDay(this.now()), keys: new Map() }
  }

  /** One answered request. Synchronous, never throws: it runs on the gateway's answer path. */
  record(x: GatewayExchange): void {
    try {
      const calls = this.count(x)
      const spent = this.spent.get(x.caller.accountId) ?? 0
      if (spent >= this.budget || this.spentTotal >= this.totalBudget) {
        this.skipped += calls
        return
      }
      this.spent.set(x.caller.accountId, spent + calls)
      this.spentTotal += calls
      const rows = buildRows(x)
      this.kept += rows.length
      for (const r of rows) this.rows.push(r)
      if (this.rows.length > MAX_PENDING_ROWS) this.rows.splice(0, this.rows.length - MAX_PENDING_ROWS)
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'could not record a request')
    }
  }

  /** Adds the exchange's calls to its key's counts; how many calls it had. */
  private count(x: GatewayExchange): number {
    // A single call's body is read only when its method is not in its slot (a recalled call's
    // body is made on reading: rpc/admission-memo.ts).
    const items = x.batch ? itemsOf(x) : undefined
    const n = items ? items.length : 1
    let k = this.counts.keys.get(x.caller.keyId)
    if (!k) {
      k = { accountId: x.caller.accountId, methods: new Map() }
      this.counts.keys.set(x.caller.keyId, k)
    }
    const limited = x.status === 429
    for (let i = 0; i < n; i++) {
      const slot = x.slots?.[i]
      const method = slot?.call
        ? slot.call.spec.label
        : this.opts.label(x, methodOf(items ? items[i] : x.body))
      let c = k.methods.get(method)
      if (!c) {
        c = { calls: 0, computeUnits: 0, errors: 0, limited: 0 }
        k.methods.set(method, c)
      }
      c.calls++
      if (limited) c.limited++
      else {
        if (x.status >= 400 || x.codes?.[i] !== undefined || (slot && !slot.call)) c.errors++
        if (x.status < 400 && slot?.call && !slot.intercepted) c.computeUnits += slot.call.computeUnits
      }
    }
    return n
  }

  /** Writes what was kept and counted (one flush at a time). */
  readonly flush: () => Promise<void> = oneAtATime(() => this.write())

  private async write(): Promise<void> {
    const rows = this.rows
    this.rows = []
    this.spent = new Map()
    this.spentTotal = 0
    const deltas = [...this.carried, ...this.takeCounts()]
    this.carried = []
    try {
      const failed = await insertRequests(this.db, rows)
      if (failed.length > 0) this.rows.unshift(...failed.slice(-MAX_PENDING_ROWS))
    } catch (err) {
      this.rows.unshift(...rows.slice(-MAX_PENDING_ROWS))
      this.logger.warn({ err: (err as Error).message, rows: rows.length }, 'could not write the request log')
    }
    try {
      await addKeyUsage(this.db, deltas)
    } catch (err) {
      this.carried = deltas
      this.logger.warn(
        { err: (err as Error).message },
        'could not write per-key usage; kept for the next flush',
      )
    }
  }

  /** The counts so far as deltas, and a fresh day (rolled over when the UTC day changed). */
  private takeCounts(): KeyUsageDelta[] {
    const { day, keys } = this.counts
    // A flush interval that spans midnight counts under the day it began in (at most one interval).
    this.counts = { day: utcDay(this.now()), keys: new Map() }
    const out: KeyUsageDelta[] = []
    for (const [keyId, { accountId, methods }] of keys)
      for (const [method, c] of methods) out.push({ keyId, accountId, day, method, ...c })
    return out
  }

  start(): void {
    if (this.loop) return
    this.loop = periodicLoop({
      failure: 'request log flush failed',
      logger: this.logger,
      intervalMs: this.opts.flushMs ?? DEFAULT_REQUEST_FLUSH_MS,
      work: () => this.flush(),
      unref: true,
    })
    this.loop.start()
  }

  async stop(): Promise<void> {
    await this.loop?.stop()
    this.loop = undefined
    await this.flush()
  }
}

function methodOf(item: unknown): string {
  const m = (item as { method?: unknown } | null)?.method
  return typeof m === 'string' ? m : ''
}
