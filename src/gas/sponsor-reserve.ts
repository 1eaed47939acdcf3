import { randomBytes, randomInt } from 'node:crypto'
import { type HalyardError, invalidRequest, notFound } from '../errors.ts'
import { sees, type Viewer } from '../http/access.ts'
import type { Address } from '../types.ts'
import {
  type Counters,
  checkCounters,
  checkOperation,
  type OpFacts,
  rateWindowStart,
  SponsorshipRefused,
  utcDay,
} from './policy-checks.ts'
import { addDecimal } from './policy-decimal.ts'
import { type CompiledRules, compileRules, type PolicyRules } from './policy-rules.ts'
import type { PolicyRow } from './policy-store.ts'
import {
  type AccountUsage,
  type Ceilings,
  checkCeilings,
  effectiveCeilings,
  type PlanCeilings,
} from './sponsor-ceilings.ts'
import type { NewReservation, SenderTotals, SponsorStore, Trx } from './sponsor-store.ts'

/**
 * The deciding transaction: locks the policy row, reads its counters, runs every rule for each
 * request of the batch in arrival order (each accepted one counted before the next is
 * decided), and writes the accepted reservations with their counter updates before committing.
 * Any number of instances on one PostgreSQL queue on the row lock; PGlite has one connection.
 */

/** Who asks (a viewer: another account's policy, or a mainnet one for a test key, is a 404). */
export interface ReserveRequest extends Viewer {
  /** The network the request names; the policy must be for it. */
  chain: string
  facts: Omit<OpFacts, 'nowMs'>
  entryPoint: Address
  paymaster: Address
  nonce: bigint
  nativePriceUsd: string | null
}

export type ReserveOutcome =
  | { ok: true; id: string; validUntil: number; validAfter: number; policy: PolicyRow }
  | { ok: false; error: HalyardError }

export const newSponsorshipId = () => `sp_${randomBytes(12).toString('hex')}`

/** The operator's ceilings on a network (sponsor-ceilings.ts) and its currency's symbol. */
export interface NetworkCeilings {
  plans: PlanCeilings
  symbol: string
}

export function reserveBatch(
  store: SponsorStore,
  policyId: string,
  reqs: readonly ReserveRequest[],
  nowMs: number,
  ceilingsFor: (network: string) => NetworkCeilings,
): Promise<ReserveOutcome[]> {
  return store.transaction(async (trx) => {
    const policy = await store.lockPolicy(trx, policyId)
    if (!policy) return reqs.map(() => ({ ok: false, error: notFound(`policy ${policyId} not found`) }))
    const rules = compileRules(policy.rules as PolicyRules)
    const day = utcDay(nowMs)
    const state = await loadState(store, trx, policy, rules, reqs, nowMs)
    // After the policy's lock, the account's (policy row, then day row: settlement's order too).
    const usage = await store.accountUsage(trx, policy.account_id, policy.chain, day, true)
    const ceiling = ceilingsFor(policy.chain)
    const limits = effectiveCeilings(ceiling.plans, usage)
    const accepted: NewReservation[] = []
    const out: ReserveOutcome[] = []
    for (const r of reqs) {
      const facts: OpFacts = { ...r.facts, nowMs }
      const refusal =
        precondition(policy, r) ??
        decide(rules, facts, state.counters(r.facts.sender)) ??
        (await ceilingRefusal(store, trx, limits, usage, facts, ceiling.symbol))
      if (refusal) {
        out.push({ ok: false, error: refusal })
        continue
      }
      state.count(facts, day)
      usage.dayWei += facts.maxCostWei
      usage.reservedWei += facts.maxCostWei
      const id = newSponsorshipId()
      const validUntil = expiry(rules, nowMs)
      const validAfter = validityTag()
      accepted.push({
        id,
        policy_id: policy.id,
        account_id: policy.account_id,
        network: r.facts.network,
        entry_point: r.entryPoint,
        paymaster: r.paymaster,
        sender: r.facts.sender,
        nonce: r.nonce,
        max_cost_wei: r.facts.maxCostWei,
        max_cost_usd: r.facts.maxCostUsd,
        native_price_usd: r.nativePriceUsd,
        valid_until: validUntil,
        valid_after: validAfter,
        day,
        created_at: new Date(nowMs),
      })
      out.push({ ok: true, id, validUntil, validAfter, policy })
    }
    await store.reserve(trx, policy, day, accepted, state.rateWindow)
    return out
  })
}

/** The policy-level refusals: someone else's policy, another chain, paused. */
export function precondition(
  policy: PolicyRow,
  r: Pick<ReserveRequest, 'accountId' | 'networks' | 'chain'>,
): HalyardError | null {
  if (policy.account_id !== r.accountId || !sees(r, policy.chain))
    return notFound(`policy ${policy.id} not found`)
  if (policy.chain !== r.chain)
    return invalidRequest(`policy_id: policy ${policy.id} sponsors on ${policy.chain}, not on ${r.chain}`)
  if (policy.status !== 'active')
    return new SponsorshipRefused({
      rule: 'status',
      message: `status: policy ${policy.id} is ${policy.status}; PATCH its status to active to sponsor again`,
    })
  return null
}

export function decide(rules: CompiledRules, facts: OpFacts, counters: Counters): HalyardError | null {
  const refusal = checkOperation(rules, facts) ?? checkCounters(rules, facts, counters)
  return refusal ? new SponsorshipRefused(refusal) : null
}

/**
 * The operator's ceilings for one more operation of the account; a reserved-at-once refusal
 * says when the account's first open reservation expires (settlement may free it sooner).
 */
export async function ceilingRefusal(
  store: SponsorStore,
  db: Trx | null,
  limits: Ceilings,
  usage: AccountUsage,
  facts: OpFacts,
  symbol: string,
): Promise<HalyardError | null> {
  const r = checkCeilings(limits, usage, facts.maxCostWei, {
    network: facts.network,
    symbol,
    nowMs: facts.nowMs,
  })
  if (!r) return null
  if (r.rule === 'ceiling_reserved_at_once') {
    const until = await store.firstOpenExpiry(db ?? store.db, usage.accountId, facts.network)
    if (until !== null) r.retryAfterSeconds = Math.max(1, until - Math.floor(facts.nowMs / 1000))
  }
  return new SponsorshipRefused(r)
}

/**
 * The signature's validAfter: a random second of 1970 (always past, so it restricts nothing).
 * Settlement reads it back from the mined op to tell which of two signatures for one op was used.
 */
export const VALIDITY_TAG_MAX = 0xffffff
const validityTag = () => randomInt(1, VALIDITY_TAG_MAX + 1)

/** validUntil: now + sponsorship_expiry_seconds, and never past the policy's end_time. */
export function expiry(rules: CompiledRules, nowMs: number): number {
  const until = Math.floor(nowMs / 1000) + rules.expirySeconds
  return rules.endMs === null ? until : Math.min(until, Math.floor(rules.endMs / 1000))
}

/**
 * The policy's counters as the rules see them, kept current while the batch is decided. With
 * `trx` null the read is unlocked (the ERC-7677 stub's early answer, which reserves nothing).
 */
export async function loadState(
  store: SponsorStore,
  trx: Trx | null,
  policy: PolicyRow,
  rules: CompiledRules,
  reqs: readonly Pick<ReserveRequest, 'facts'>[],
  nowMs: number,
) {
  const db = trx ?? store.db
  const senderList = [...new Set(reqs.map((r) => r.facts.sender))]
  const rate = rules.rules.rate_limit
  const senders = await store.senders(db, policy.id, senderList)
  const day = utcDay(nowMs)
  let ops = Number(policy.ops_count)
  let spendUsd = addDecimal(policy.reserved_usd, policy.settled_usd)
  const windowStart = rate ? rateWindowStart(nowMs, rate.window_seconds) : 0
  const windowEndMs = rate ? (windowStart + rate.window_seconds) * 1000 : 0
  let windowCount = rate && Number(policy.rate_window_start) === windowStart ? policy.rate_window_count : 0
  return {
    /** The rate_limit window the batch counts into (null without the rule). */
    rateWindow: rate ? windowStart : null,
    counters(sender: Address): Counters {
      const s = senders.get(sender)
      return {
        ops,
        spendUsd,
        senderSpendUsd: s?.spendUsd ?? '0',
        senderDayOps: s && s.day === day ? s.dayOps : 0,
        windowCount,
        windowEndMs,
      }
    },
    count(f: OpFacts, today: string) {
      const cost = f.maxCostUsd ?? '0'
      ops += 1
      spendUsd = addDecimal(spendUsd, cost)
      windowCount += 1
      const s: SenderTotals = senders.get(f.sender) ?? { spendUsd: '0', day: today, dayOps: 0 }
      senders.set(f.sender, {
        spendUsd: addDecimal(s.spendUsd, cost),
        day: today,
        dayOps: (s.day === today ? s.dayOps : 0) + 1,
      })
    },
  }
}
