import { randomBytes } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { BlockConsumer, DbTransaction, IndexedBlock } from '../indexer/types.ts'
import type { Logger } from '../logger.ts'
import type { DB } from '../storage/database.ts'
import type { Database } from '../storage/schema.ts'
import { BlockIndex } from './block-index.ts'
import { configFor, typesOf } from './config.ts'
import type { LeaseStamp } from './delivery.ts'
import { type Candidate, candidate, type Draft, EventDrafter } from './event-drafts.ts'
import { camelData, type DeliveryFormat, envelopeB } from './form-b.ts'
import { overQuotaReason, utcDay } from './quota.ts'
import type { ReceiptReader } from './receipts.ts'
import type { ClaimedEvent, NewEvent } from './store.ts'
import * as store from './store.ts'
import type { TokenMetadata } from './token-metadata.ts'
import type { TraceReader } from './traces.ts'

/**
 * Turns indexed blocks into webhook events (form A `data`), inside the indexer's
 * transaction: events commit atomically with the block and its cursor, so a crash neither
 * loses nor duplicates them. Candidate webhooks come from ONE indexed lookup per block over
 * every address, contract and tx hash the block touches (webhook_match_keys), never a scan of
 * all webhooks; the per-item filter then runs only on those candidates.
 *
 * Payloads beyond the fixed transfer shapes (documented in docs/webhooks.md):
 *  - mined_transaction: chain, block_number, block_hash, tx_hash, transaction_index, from, to,
 *    value, status (`success` | `reverted`; null if the node had no receipt), gas_used.
 *  - log: chain, block_number, block_hash, tx_hash, log_index, address, topics, data.
 *  - address_activity covers every transaction from/to a watched address (value may be "0" for
 *    a contract call) and every ERC-20 transfer touching it; NFTs go to nft_transfer.
 */

const earlyKey = (b: IndexedBlock) => `${b.network}:${b.hash}`

export interface MatcherOptions {
  /** The network's chain id, for form B's envelope (0 when not given: unit tests). */
  chainIdOf?: (network: string) => number
  /** Daily delivery quota of a plan (quota.ts); null or absent = unlimited. */
  quotaOf?: (plan: string) => number | null
  /** The clock the quota's UTC day is read from (tests move it to the next day). */
  now?: () => Date
  /** Call traces, for internal_transfer webhooks. */
  traces?: TraceReader
}

/** What the matcher reads with, and its options. */
export interface MatcherDeps extends MatcherOptions {
  db: DB
  tokens: TokenMetadata
  receipts: ReceiptReader
  /** The network's native currency symbol (address_activity's native value). */
  nativeSymbol: (network: string) => string
  logger: Logger
}

/** What the matcher needs of this process's delivery worker to lease it events at insert. */
export interface DeliveryHandoff {
  /** Lanes (webhooks) the worker takes now; 0 when it is not running. */
  adoptionRoom(): number
  readonly perLane: number
  leaseMs(): number
  leaseStamp(): LeaseStamp
  /** Called after the commit with the events leased to it, in block order. */
  adopt(events: readonly ClaimedEvent[], stamp: LeaseStamp): void
}

/**
 * Which events to lease: each webhook's first `perLane` of the block, for the first `lanes`
 * webhooks. The rest go in pending, behind them, and are claimed as usual.
 */
export function leaseFlags(events: readonly NewEvent[], lanes: number, perLane: number): boolean[] {
  const perWebhook = new Map<string, number>()
  return events.map((e) => {
    const n = perWebhook.get(e.webhook_id)
    if (n === undefined) {
      if (perWebhook.size >= lanes) return false
      perWebhook.set(e.webhook_id, 1)
      return true
    }
    if (n >= perLane) return false
    perWebhook.set(e.webhook_id, n + 1)
    return true
  })
}

export const newEventId = () => `evt_${randomBytes(12).toString('hex')}`

/** What one network's open indexer transaction has inserted, until it commits. */
interface PendingCommit {
  trx: DbTransaction
  leased: Array<{ events: ClaimedEvent[]; stamp: LeaseStamp }>
  /** Webhooks (lanes) among `leased`. */
  lanes: number
  /** Events went in that nobody leased: the worker is to claim them. */
  produced: boolean
}

/** A block's events, and how long finding the webhooks and building the events took. */
interface Matched {
  events: NewEvent[]
  /** Each matched webhook's account (for the quota). */
  accounts?: Map<string, string>
  /**
   * Those accounts' plans, read while matching (before the indexer's transaction when the
   * match ran early), so an unlimited plan costs no statement inside the transaction.
   */
  plans?: Map<string, string>
  lookupMs: number
  buildMs: number
}

export class WebhookMatcher implements BlockConsumer {
  readonly name = 'webhooks'
  /**
   * address_activity (native value) and mined_transaction read the block's transactions, so
   * while a webhook of those types is active a backfill must publish every block with them;
   * otherwise blocks with logs are enough (a backfill with no such webhook skips the rest).
   */
  needsFullBlocks(network: string): Promise<boolean> {
    return store.watchesTransactions(this.db, network)
  }
  /**
   * Parsed configs by webhook id, one per event type it monitors, with the row version they
   * came from (a PATCH changes it).
   */
  private readonly parsed = new Map<string, Candidate[]>()
  /** Called once a commit with unleased new events is done (the delivery worker claims at once). */
  onEvents: ((network: string, block: bigint) => void) | undefined
  /** This process's delivery worker, when it runs: events are leased to it as they are inserted. */
  handoff: DeliveryHandoff | undefined
  /**
   * Per network (each network's indexer runs its own transactions, concurrently on
   * PostgreSQL): the transaction onBlock last ran in, what it leased (handed over only once it
   * commits) and whether it inserted events nobody leased.
   */
  private readonly pending = new Map<string, PendingCommit>()
  /** Matches started by prepare(), by network and block hash, taken by onBlock. */
  private readonly early = new Map<string, Promise<Matched | undefined>>()
  /** Called inside a rollback, before it commits (the delivery worker stops its lanes). */
  onRollbackStarted: (() => void) | undefined

  private readonly drafter: EventDrafter

  private readonly db: DB
  private readonly logger: Logger
  private readonly opts: MatcherOptions

  constructor(deps: MatcherDeps) {
    const { db, tokens, receipts, nativeSymbol, logger, ...opts } = deps
    this.db = db
    this.logger = logger
    this.opts = opts
    this.drafter = new EventDrafter(tokens, receipts, nativeSymbol)
  }

  /**
   * Matches a block before the indexer's transaction opens (lookup on another pooled
   * connection, events built meanwhile), so the matching overlaps the index insert instead of
   * following it; onBlock then only inserts. Reading the webhooks outside the transaction is
   * no weaker than inside it: at READ COMMITTED each statement sees its own snapshot anyway.
   */
  prepare(block: IndexedBlock): Promise<void> {
    if (this.early.size > 8) this.early.clear()
    const p = this.match(this.db, block).catch((err) => {
      this.logger.debug(
        { err: (err as Error).message },
        'early webhook match failed; matching in the transaction',
      )
      return undefined
    })
    this.early.set(earlyKey(block), p)
    return p.then(() => {})
  }

  async onBlock(trx: DbTransaction, block: IndexedBlock): Promise<void> {
    let pending = this.pending.get(block.network)
    if (pending?.trx !== trx) {
      // A new transaction: whatever an earlier one of this network leased was rolled back with it.
      pending = { trx, leased: [], lanes: 0, produced: false }
      this.pending.set(block.network, pending)
    }
    const key = earlyKey(block)
    const early = this.early.get(key)
    this.early.delete(key)
    const m = (early && (await early)) ?? (await this.match(trx, block))
    if (m.events.length === 0) return
    const t0 = performance.now()
    const handoff = this.handoff
    let lanesPending = 0
    for (const p of this.pending.values()) lanesPending += p.lanes
    const room = handoff ? handoff.adoptionRoom() - lanesPending : 0
    const flags = handoff && room > 0 ? leaseFlags(m.events, room, handoff.perLane) : undefined
    const stamp = handoff?.leaseStamp()
    const over = await this.overQuota(trx, m)
    const leased = await store.insertEvents(
      trx,
      m.events,
      handoff && flags ? { flags, leaseMs: handoff.leaseMs() } : undefined,
      over,
    )
    if (over) {
      await store.recordOverQuota(
        trx,
        m.events.flatMap((e) => {
          const reason = over.get(e.id)
          return reason === undefined ? [] : [{ id: e.id, webhook_id: e.webhook_id, reason }]
        }),
      )
    }
    if (stamp && leased.length > 0) {
      pending.leased.push({ events: leased, stamp })
      pending.lanes += new Set(leased.map((e) => e.webhook_id)).size
    }
    if (leased.length + (over?.size ?? 0) < m.events.length) pending.produced = true
    // Stage timings (bench:webhooks prints them from here).
    this.logger.debug(
      {
        lookupMs: m.lookupMs,
        buildMs: m.buildMs,
        insertMs: performance.now() - t0,
        early: early !== undefined,
        network: block.network,
        block: block.number.toString(),
        events: m.events.length,
        leased: leased.length,
      },
      'webhook events',
    )
  }

  private async match(db: Kysely<Database>, block: IndexedBlock): Promise<Matched> {
    const started = performance.now()
    const txs = block.transactions ?? []
    const keys = new Set<string>()
    for (const t of txs) {
      keys.add(t.from)
      if (t.to) keys.add(t.to)
      keys.add(t.hash)
    }
    for (const t of block.transfers) {
      keys.add(t.from)
      keys.add(t.to)
      keys.add(t.contract)
    }
    for (const l of block.logs) keys.add(l.address)
    const rows = await store.candidates(db, block.network, [...keys])
    if (rows.length === 0) return { events: [], lookupMs: performance.now() - started, buildMs: 0 }
    let stale = rows.filter((r) => this.parsed.get(r.webhook_id)?.[0]?.version !== r.version)
    if (stale.length > 0) {
      if (this.parsed.size + stale.length > 50_000) {
        this.parsed.clear()
        stale = rows
      }
      const types = new Map(stale.map((r) => [r.webhook_id, typesOf(r)]))
      for (const c of await store.configs(
        db,
        stale.map((r) => r.webhook_id),
      )) {
        const list = types.get(c.id) ?? []
        // Each type drafts from the keys it reads (several types share one stored config).
        const cfg = list.length > 1 ? JSON.parse(c.config) : undefined
        this.parsed.set(
          c.id,
          list.map((t) =>
            candidate(
              c.id,
              t,
              cfg ? JSON.stringify(configFor(t, cfg)) : c.config,
              c.version,
              c.format as DeliveryFormat,
              c.account_id,
            ),
          ),
        )
      }
    }
    const lookedUp = performance.now()

    // Each candidate is checked only against the block items its matched keys point at, so a
    // block with 10,000 transfers and 1,000 candidate webhooks costs ~10,000 checks, not 10^7.
    const matched: Array<{ cs: Candidate[]; keys: Array<{ kind: string; key: string }> }> = []
    const formats = new Map<string, DeliveryFormat>()
    const accounts = new Map<string, string>()
    for (const r of rows) {
      const cs = this.parsed.get(r.webhook_id)
      const c = cs?.[0]
      // Deleted between the two reads: nothing to deliver to.
      if (!cs || !c) continue
      formats.set(c.id, c.format)
      if (c.accountId) accounts.set(c.id, c.accountId)
      matched.push({ cs, keys: r.keys.map((key, i) => ({ kind: r.kinds[i] as string, key })) })
    }
    // Read while the events are built (a failed read leaves it to overQuota, in the transaction).
    const plansRead = this.opts.quotaOf
      ? store.accountPlans(db, [...new Set(accounts.values())]).catch(() => undefined)
      : undefined
    const index = new BlockIndex(block, txs)
    const txIndex = new Map(txs.map((t) => [t.hash, t.index]))
    // The transfers the indexer traced and commits with this block (one source); traced here
    // only when it did not (tracing off or failed) and an internal_transfer webhook is a candidate.
    const internal =
      block.internalTransfers ??
      (this.opts.traces && matched.some((m) => m.cs.some((c) => c.eventType === 'internal_transfer'))
        ? await this.opts.traces.internalTransfers(
            block.network,
            block.number,
            txs.map((t) => t.hash),
          )
        : [])
    const drafts: Draft[] = []
    for (const { cs, keys: hits } of matched) {
      const view = index.narrow(hits)
      const narrowed: IndexedBlock = { ...block, transfers: view.transfers, logs: view.logs }
      for (const c of cs) await this.drafter.draft(c, narrowed, view.txs, drafts, txIndex, internal)
    }
    if (drafts.length === 0)
      return { events: [], lookupMs: lookedUp - started, buildMs: performance.now() - lookedUp }
    drafts.sort((a, b) => a.order[0] - b.order[0] || a.order[1] - b.order[1])
    const createdAt = new Date().toISOString()
    // One random draw for the block's ids, not one per event.
    const random = randomBytes(12 * drafts.length).toString('hex')
    const chainId = this.opts.chainIdOf?.(block.network) ?? 0
    const events: NewEvent[] = drafts.map((d, i) => {
      const id = `evt_${random.slice(24 * i, 24 * i + 24)}`
      const body =
        formats.get(d.webhookId) === 'B'
          ? envelopeB(id, d.eventType, createdAt, block.network, chainId, d.dataB ?? camelData(d.data))
          : { id, event_type: d.eventType, webhook_id: d.webhookId, created_at: createdAt, data: d.data }
      return {
        id,
        webhook_id: d.webhookId,
        network: block.network,
        block_number: block.number.toString(),
        event_type: d.eventType,
        body: JSON.stringify(body),
      }
    })
    const plans = await plansRead
    return { events, accounts, plans, lookupMs: lookedUp - started, buildMs: performance.now() - lookedUp }
  }

  /**
   * Charges the block's events to their accounts' daily quotas (in the indexer's transaction)
   * and says which events are past it: those are written `over_quota`, never sent.
   */
  private async overQuota(trx: DbTransaction, m: Matched): Promise<Map<string, string> | undefined> {
    const quotaOf = this.opts.quotaOf
    if (!quotaOf || !m.accounts) return undefined
    const perAccount = new Map<string, number>()
    for (const e of m.events) {
      const a = m.accounts.get(e.webhook_id)
      if (a) perAccount.set(a, (perAccount.get(a) ?? 0) + 1)
    }
    const day = utcDay(this.opts.now?.() ?? new Date())
    const charged = await store.chargeQuota(
      trx,
      day,
      [...perAccount].map(([accountId, events]) => ({ accountId, events })),
      quotaOf,
      m.plans,
    )
    if (![...charged].some(([a, c]) => c.allowed < (perAccount.get(a) ?? 0))) return undefined
    const over = new Map<string, string>()
    const left = new Map([...charged].map(([a, c]) => [a, c.allowed]))
    for (const e of m.events) {
      const a = m.accounts.get(e.webhook_id)
      const c = a === undefined ? undefined : charged.get(a)
      if (a === undefined || c === undefined) continue
      const n = left.get(a) ?? 0
      if (n > 0) left.set(a, n - 1)
      else over.set(e.id, overQuotaReason(c.plan, c.quota, day))
    }
    return over.size > 0 ? over : undefined
  }

  afterCommit(network: string, cursor: bigint): void {
    const pending = this.pending.get(network)
    if (!pending) return
    this.pending.delete(network)
    for (const l of pending.leased) this.handoff?.adopt(l.events, l.stamp)
    if (pending.produced) this.onEvents?.(network, cursor)
  }

  async onRollback(trx: DbTransaction, network: string, ancestor: bigint): Promise<void> {
    this.pending.set(network, { trx, leased: [], lanes: 0, produced: false })
    await store.cancelAbove(trx, network, ancestor)
    this.onRollbackStarted?.()
  }
}
