import { BackgroundLoop } from '../common/background-loop.ts'
import type { Logger } from '../logger.ts'
import type { DB } from '../storage/database.ts'
import type { DeliveryOptions } from './delivery-options.ts'
import { LaneQueue } from './lane-queue.ts'
import { type Lane, lanesOf } from './lanes.ts'
import { LeaseKeeper } from './lease-keeper.ts'
import { OutcomeWriter } from './outcome-writer.ts'
import { RetryAlarm } from './retry-alarm.ts'
import { WebhookSender } from './sender.ts'
import type { AttemptOutcome, ClaimedEvent } from './store.ts'
import * as store from './store.ts'

/**
 * The delivery worker (form A, docs/webhooks.md). Every instance may run one: events are claimed from
 * PostgreSQL with FOR UPDATE SKIP LOCKED (store.claim) — only each webhook's oldest undelivered
 * event, so per webhook events go out in block order, one at a time — and leased, so a crash
 * mid-send makes the event claimable again after the lease (at-least-once; the event id never
 * changes). Leases are short and renewed while the worker lives: a dead instance's events come
 * back within seconds (docs/dependency-failures.md). Concurrency is bounded globally and per receiver host, and a host at its cap is
 * left out of the next claim, so a slow receiver never holds up other webhooks.
 * Outcomes are recorded in batches (one transaction per flush), which is what makes thousands
 * of deliveries per second possible; an event's slot is freed only once its outcome is durable.
 */

/**
 * While claims keep coming back empty the poll interval doubles up to this. Work this process
 * creates (matched events, API requeues, freed slots, its own retries falling due) wakes the
 * loop at once; only other instances' new events and expired leases wait for a poll. Polling an
 * empty queue ten times a second cost an idle instance ~8% of a core on PGlite.
 */
export const IDLE_POLL_MAX_MS = 1_000

/** The longest lease: how long a dead instance's events wait before another instance takes them. */
export const LEASE_MAX_MS = 6_000

export type PauseHandler = (webhookId: string, lastError: string) => Promise<void>

export interface DeliveryWorkerDeps {
  db: DB
  /** 32-byte key the signing secrets are decrypted with. */
  secretKey: Buffer
  opts: DeliveryOptions
  /** Failures past the threshold: pause the webhook (service.pauseAfterFailures). */
  onPause: PauseHandler
  logger: Logger
  /** The webhook's URL failed the safety checks at delivery: disable it (service.disable). */
  onDisable?: PauseHandler
  /** Each attempt's outcome once it is recorded (the delivery metrics, metrics.ts). */
  onOutcome?: (o: AttemptOutcome) => void
}

/** When a lease began, and how many reorgs this worker had seen by then. */
export interface LeaseStamp {
  at: number
  rollbacks: number
}

export class DeliveryWorker {
  /** Claimed lanes waiting for a slot, and the slots in use (lane-queue.ts). */
  private readonly lanesQueue: LaneQueue
  private readonly loop: BackgroundLoop
  private readonly active = new Set<Promise<void>>()
  private readonly sender: WebhookSender
  private readonly outcomes: OutcomeWriter
  /** Bumped when this process's indexer undoes blocks (reorg): lanes in flight stop and re-check. */
  private rollbacks = 0
  /** Empty claims in a row (reset by any wake): sets how far the idle poll has backed off. */
  private idleClaims = 0
  private readonly retries = new RetryAlarm(() => this.wake())
  /** Events this worker holds under its lease, renewed while it lives (lease-keeper.ts). */
  private readonly leases: LeaseKeeper

  private readonly db: DB
  private readonly opts: DeliveryOptions
  private readonly onPause: PauseHandler
  private readonly logger: Logger
  private readonly onDisable: PauseHandler | undefined
  private readonly onOutcome: ((o: AttemptOutcome) => void) | undefined

  constructor(deps: DeliveryWorkerDeps) {
    const { db, opts, logger } = deps
    this.db = db
    this.opts = opts
    this.onPause = deps.onPause
    this.logger = logger
    this.onDisable = deps.onDisable
    this.onOutcome = deps.onOutcome
    this.loop = new BackgroundLoop({
      failure: 'webhook claim failed',
      logger,
      round: () => this.claimRound(),
      retryMs: (failures) => Math.min(5000, opts.pollMs * 2 ** failures),
    })
    this.lanesQueue = new LaneQueue(opts.concurrency, opts.perHostCap)
    this.leases = new LeaseKeeper(db, this.leaseMs(), logger)
    this.sender = new WebhookSender(deps.secretKey, opts)
    this.outcomes = new OutcomeWriter({
      db,
      instance: opts.instance ?? null,
      logger,
      afterRecorded: (o) => this.afterRecorded(o),
      stopping: () => this.stopping,
    })
  }

  /** Stopping or stopped: lanes give their events back instead of sending. */
  private get stopping(): boolean {
    return this.loop.stopSignal.aborted
  }

  start(): void {
    if (this.loop.active) return
    this.loop.start()
    this.leases.start()
  }

  /** Gives events back to the queue (unattempted) and stops renewing them. */
  private giveBack(seqs: string[]): Promise<void> {
    this.leases.letGo(seqs)
    return store.release(this.db, seqs)
  }

  /**
   * How long after its lease began (or was last renewed) a lane may still start a send: half
   * the lease. Renewals every quarter keep a live worker's send leased, even if a busy process
   * or database delays one.
   */
  private freshForMs(): number {
    return this.leaseMs() / 2
  }

  /**
   * The indexer is undoing blocks: lanes stop before their next send and give the rest back, so
   * events the rollback cancels are not sent from a lane claimed before it. (The event being
   * sent at that moment may still go out; so may lanes of other instances.)
   */
  noteRollback(): void {
    this.rollbacks++
  }

  /**
   * Nudges the claim loop (new events, a freed slot). A nudge that arrives while the loop is
   * claiming is remembered, so the loop claims again at once instead of sleeping a poll interval
   * over events that committed just after its claim looked.
   */
  wake(): void {
    this.idleClaims = 0
    this.loop.wake()
  }

  async stop(): Promise<void> {
    this.retries.stop()
    this.leases.stop()
    await this.loop.stop()
    for (const lane of this.lanesQueue.drain()) {
      this.leases.dropLane(lane)
      this.track(this.giveBack(lane.events.map((e) => e.seq)))
    }
    await Promise.allSettled([...this.active])
    await this.outcomes.drain()
    await this.sender.close()
  }

  /** One claim (when there is room for one); answers the pause before the next. */
  private async claimRound(): Promise<number> {
    let claimed = 0
    const room = 2 * this.opts.concurrency - this.lanesQueue.inflight - this.lanesQueue.waiting
    // Claim in batches: the claim query costs about the same for 32 lanes as for 256 (it
    // probes every active webhook's head), so while lanes are waiting, wait for room.
    const idle = this.lanesQueue.inflight === 0 && this.lanesQueue.waiting === 0
    const minBatch = idle ? 1 : Math.max(1, this.opts.concurrency >> 1)
    if (room >= minBatch) {
      const t0 = performance.now()
      const events = await store.claim(
        this.db,
        room,
        this.opts.perLane,
        this.leaseMs(),
        this.lanesQueue.saturatedWebhooks(),
      )
      if (events.length > 0) {
        const ms = Math.round(performance.now() - t0)
        this.logger.debug({ ms, events: events.length, room }, 'webhook claim')
      }
      const lanes = lanesOf(events)
      claimed = lanes.size
      this.idleClaims = claimed > 0 ? 0 : this.idleClaims + 1
      const claimedAt = Date.now()
      for (const lane of lanes.values()) {
        // A lease of ours that ran out while this process was stalled (renewals queued behind
        // a busy database) comes back to us: its head is still being sent or recorded here,
        // so sending it again would be a duplicate this process can avoid. The lane's other
        // events are left to their new lease (claimed again once it runs out, in order).
        if (this.leases.holds((lane[0] as ClaimedEvent).seq)) continue
        this.queue(lane, claimedAt, this.rollbacks)
      }
      this.dispatch()
    }
    if (claimed > 0 && this.lanesQueue.inflight + this.lanesQueue.waiting < 2 * this.opts.concurrency)
      return 0
    const backoff = Math.min(IDLE_POLL_MAX_MS, this.opts.pollMs * 2 ** Math.max(0, this.idleClaims - 1))
    return Math.max(this.opts.pollMs, backoff)
  }

  /**
   * A lane's events are leased together, for at most LEASE_MAX_MS, and the worker renews its
   * leases every quarter of that while it lives (a send may take the whole receiver timeout,
   * longer than the lease). A crashed worker's events come back after at most this long. With
   * a short receiver timeout the lease is shorter still: a send started within half of it ends
   * before it runs out, renewed or not.
   */
  leaseMs(): number {
    return Math.min(this.opts.timeoutMs * 2 + 2_000, LEASE_MAX_MS)
  }

  /**
   * How many lanes the matcher may lease to this worker as it inserts a block's events (see
   * store.insertEvents): 0 while the worker is not running, so events then wait for a claim.
   */
  adoptionRoom(): number {
    if (!this.loop.active) return 0
    return Math.max(0, 4 * this.opts.concurrency - this.lanesQueue.inflight - this.lanesQueue.waiting)
  }

  /** Events per lane: what the matcher leases per webhook at most. */
  get perLane(): number {
    return this.opts.perLane
  }

  /** What a lease granted now is later checked against: its start, and the reorgs seen so far. */
  leaseStamp(): LeaseStamp {
    return { at: Date.now(), rollbacks: this.rollbacks }
  }

  /**
   * Takes events the matcher inserted already leased to this worker, once their transaction
   * has committed: they go out without a claim query. A worker that stopped meanwhile gives
   * them back.
   */
  adopt(events: readonly ClaimedEvent[], stamp: LeaseStamp): void {
    if (events.length === 0) return
    if (!this.loop.active) {
      this.track(
        store.release(
          this.db,
          events.map((e) => e.seq),
        ),
      )
      return
    }
    // Leased at insert, so a long transaction (a catch-up batch) may have used much of the
    // lease: past the point where dispatch would give a lane back, leave these to expire
    // instead, since another instance may already have claimed them.
    if (Date.now() - stamp.at > this.freshForMs()) return
    for (const lane of lanesOf(events).values()) this.queue(lane, stamp.at, stamp.rollbacks)
    this.dispatch()
  }

  private queue(events: ClaimedEvent[], claimedAt: number, rollbacks: number): void {
    const lane = this.lanesQueue.add(events, claimedAt, rollbacks)
    this.leases.hold(lane)
  }

  /**
   * Starts waiting lanes while slots are free (lane-queue.ts). A lane that waited so long that
   * its lease could run out before its first send ends, or that a reorg overtook, is given back
   * unattempted.
   */
  private dispatch(): void {
    const now = Date.now()
    this.lanesQueue.dispatch(
      () => this.stopping,
      (lane) => now - lane.claimedAt > this.freshForMs() || lane.rollbacks !== this.rollbacks,
      (lane) => {
        this.leases.dropLane(lane)
        this.track(this.giveBack(lane.events.map((e) => e.seq)))
      },
      (lane) => this.launch(lane),
    )
  }

  private track(p: Promise<unknown>): void {
    const q: Promise<void> = p
      .then(
        () => {},
        (err) => this.logger.warn({ err: (err as Error).message }, 'webhook release failed'),
      )
      .finally(() => this.active.delete(q))
    this.active.add(q)
  }

  /** Sends one webhook's claimed events in order; the first that fails ends the lane. */
  private launch(lane: Lane): void {
    const first = lane.events[0] as ClaimedEvent
    const release = () => {
      this.lanesQueue.finished(lane.host)
      this.dispatch()
      this.wake()
    }
    const p = this.runLane(lane)
      .catch((err) => {
        // Its events are left to their lease, which is no longer renewed: they come back.
        this.leases.letGo(lane.events.map((e) => e.seq))
        this.logger.error(
          { err: (err as Error).message, webhook: first.webhook_id },
          'webhook delivery bookkeeping failed',
        )
      })
      .finally(() => {
        this.leases.dropLane(lane)
        release()
        this.active.delete(p)
      })
    this.active.add(p)
  }

  /**
   * A delivered event's slot is freed before its outcome is durable: until the flush, the event
   * stays `sending` under its lease, so it is still the webhook's head and nothing after it can
   * be claimed — order and at-most-one-in-flight hold without waiting on the database.
   */
  private async runLane(live: Lane): Promise<void> {
    const { events: lane, rollbacks } = live
    for (let i = 0; i < lane.length; i++) {
      const rest = () => lane.slice(i).map((e) => e.seq)
      // claimedAt moves on with each renewal (lease-keeper.ts).
      const stale = i > 0 && (Date.now() - live.claimedAt > this.freshForMs() || this.rollbacks !== rollbacks)
      if (this.stopping || stale) {
        // Stopping, past half the lease, or a reorg: the rest goes back to the queue.
        await this.giveBack(rest())
        return
      }
      const outcome = await this.sender.deliver(lane[i] as ClaimedEvent)
      if (outcome.operatorFault) {
        this.logger.error({ webhook: outcome.ev.webhook_id, event: outcome.ev.id }, outcome.error ?? '')
      }
      const seq = outcome.ev.seq
      if (outcome.next !== 'delivered') {
        // Later events wait behind this one (block order): record it, give them back unattempted.
        await new Promise<void>((done) =>
          this.outcomes.record(outcome, () => {
            this.leases.letGo([seq])
            done()
          }),
        )
        await this.giveBack(lane.slice(i + 1).map((e) => e.seq))
        return
      }
      // Held (and renewed) until recorded: until then it still heads its webhook's queue.
      this.outcomes.record(outcome, () => this.leases.letGo([seq]))
    }
  }

  /**
   * An event recorded delivered or failed no longer heads its webhook's queue: the loop claims
   * again now, since a claim while it was still `sending` passed over the events behind it. A
   * recorded retry wakes the loop when due; the last failure pauses the webhook.
   */
  private async afterRecorded(o: AttemptOutcome): Promise<void> {
    this.onOutcome?.(o)
    if (o.next !== 'pending') this.wake()
    if (o.disable !== undefined) {
      await this.onDisable?.(o.ev.webhook_id, o.disable).catch((err) =>
        this.logger.error(
          { err: (err as Error).message, webhook: o.ev.webhook_id },
          'disabling webhook failed',
        ),
      )
      return
    }
    if (o.next === 'pending' && o.retryAt) this.retries.at(o.retryAt.getTime())
    // Form B: the event is marked failed and that is all; the webhook stays active.
    if (o.next !== 'failed' || o.ev.format === 'B') return
    await this.onPause(o.ev.webhook_id, o.error ?? `HTTP ${o.statusCode}`).catch((err) =>
      this.logger.error({ err: (err as Error).message, webhook: o.ev.webhook_id }, 'pausing webhook failed'),
    )
  }
}
