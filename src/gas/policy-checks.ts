import { HalyardError } from '../errors.ts'
import type { JsonRpcAnswerable } from '../http/jsonrpc-errors.ts'
import { type JsonRpcErrorObject, RPC_FORBIDDEN, RPC_RATE_LIMITED } from '../jsonrpc.ts'
import type { Address } from '../types.ts'
import type { AccountCall } from './policy-calls.ts'
import { addDecimal, compareDecimal } from './policy-decimal.ts'
import { type CompiledRules, USD_RULES } from './policy-rules.ts'

/**
 * Whether a policy sponsors one operation: pure functions over the operation's facts and the
 * policy's counters, so the transaction that decides runs them under the policy's row lock and
 * the ERC-7677 stub runs them without one. A refusal names the rule and gives the numbers.
 */

export interface OpFacts {
  network: string
  sender: Address
  /** The calls the account will make; null when its callData could not be decoded. */
  calls: readonly AccountCall[] | null
  /** The most the op can cost the paymaster (the EntryPoint's prefund). */
  maxCostWei: bigint
  /** maxCostWei in USD at the current native price; null when no price is known. */
  maxCostUsd: string | null
  nowMs: number
}

/** What the policy has used so far, read under its lock. */
export interface Counters {
  /** Reserved and settled operations. */
  ops: number
  /** Reserved maxima plus settled actual costs. */
  spendUsd: string
  senderSpendUsd: string
  /** The sender's operations on the UTC day of `nowMs`. */
  senderDayOps: number
  /** Signatures in the current rate_limit window, and when that window ends. */
  windowCount: number
  windowEndMs: number
}

export type RuleName =
  | keyof CompiledRules['rules']
  | 'status'
  | 'chain'
  | 'paymaster_deposit'
  /** The operator's ceilings (sponsor-ceilings.ts), above every policy. */
  | 'ceiling_per_operation'
  | 'ceiling_per_day'
  | 'ceiling_reserved_at_once'

export interface Refusal {
  rule: RuleName
  message: string
  /** Set for limits that free up with time (rate_limit, max_per_user_per_day). */
  retryAfterSeconds?: number
}

/** A sponsorship refused by a policy rule: 403, or 429 with Retry-After when waiting helps. */
export class SponsorshipRefused extends HalyardError implements JsonRpcAnswerable {
  readonly rule: RuleName
  constructor(r: Refusal) {
    super(
      r.retryAfterSeconds !== undefined ? 'rate_limited' : 'forbidden',
      r.message,
      r.retryAfterSeconds !== undefined ? { 'retry-after': String(r.retryAfterSeconds) } : {},
    )
    this.rule = r.rule
  }

  /** On JSON-RPC (ERC-7677): -32005 with data.retryAfter for a rate rule, else -32003, naming the rule. */
  jsonRpcError(): JsonRpcErrorObject {
    if (this.code === 'rate_limited')
      return {
        code: RPC_RATE_LIMITED,
        message: this.message,
        data: { rule: this.rule, retryAfter: Number(this.headers['retry-after']) },
      }
    return { code: RPC_FORBIDDEN, message: this.message, data: { rule: this.rule } }
  }
}

const usd = (v: string) => `$${v}`
const DAY_MS = 86_400_000

/**
 * rate_limit windows are aligned to Unix time (a 60 s window is each wall-clock minute): the
 * count lives on the policy row, so deciding costs no scan of past signatures.
 */
export function rateWindowStart(nowMs: number, windowSeconds: number): number {
  const sec = Math.floor(nowMs / 1000)
  return sec - (sec % windowSeconds)
}

export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)

/** The rules that need no counters: time window, sender lists, calls, the op's own cost. */
export function checkOperation(c: CompiledRules, f: OpFacts): Refusal | null {
  const r = c.rules
  if (c.startMs !== null && f.nowMs < c.startMs)
    return {
      rule: 'start_time',
      message: `start_time: the policy sponsors from ${r.start_time}; it is ${iso(f.nowMs)}`,
    }
  if (c.endMs !== null && f.nowMs >= c.endMs)
    return {
      rule: 'end_time',
      message: `end_time: the policy stopped sponsoring at ${r.end_time}; it is ${iso(f.nowMs)}`,
    }
  if (c.block?.has(f.sender))
    return {
      rule: 'sender_blocklist',
      message: `sender_blocklist: sender ${f.sender} is blocked by this policy`,
    }
  if (c.allow && !c.allow.has(f.sender))
    return {
      rule: 'sender_allowlist',
      message: `sender_allowlist: sender ${f.sender} is not in the policy's allowlist`,
    }
  if (c.contracts || c.methods) {
    const rule = c.contracts ? 'allowed_contracts' : 'allowed_methods'
    if (!f.calls)
      return {
        rule,
        message: `${rule}: the operation's callData is not a call this service can decode (SimpleAccount, LightAccount, Coinbase Smart Wallet, ERC-7579 or Safe execute/executeBatch), so its targets cannot be checked`,
      }
    for (const [i, call] of f.calls.entries()) {
      if (c.contracts && !c.contracts.has(call.to))
        return {
          rule: 'allowed_contracts',
          message: `allowed_contracts: call ${i + 1} of ${f.calls.length} targets ${call.to}, which the policy does not allow`,
        }
      if (c.methods && (call.selector === null || !c.methods.has(call.selector)))
        return {
          rule: 'allowed_methods',
          message:
            call.selector === null
              ? `allowed_methods: call ${i + 1} of ${f.calls.length} (to ${call.to}) carries no data and so no method; the policy allows only ${[...c.methods].join(', ')}`
              : `allowed_methods: call ${i + 1} of ${f.calls.length} (to ${call.to}) uses method ${call.selector}, which the policy does not allow`,
        }
    }
  }
  if (f.maxCostUsd === null) {
    const rule = USD_RULES.find((k) => r[k] !== undefined)
    if (rule)
      return {
        rule,
        message: `${rule}: no USD price is known for ${f.network}'s native currency, so this rule cannot be checked and the operation is not sponsored`,
      }
  } else if (r.max_gas_usd !== undefined && compareDecimal(f.maxCostUsd, r.max_gas_usd) > 0) {
    return {
      rule: 'max_gas_usd',
      message: `max_gas_usd: the operation may cost up to ${usd(f.maxCostUsd)} (${f.maxCostWei} wei: all gas limits × maxFeePerGas); the policy allows ${usd(r.max_gas_usd)} per operation`,
    }
  }
  return null
}

/** The rules that count: totals, per sender, per day, per window. */
export function checkCounters(c: CompiledRules, f: OpFacts, n: Counters): Refusal | null {
  const r = c.rules
  const cost = f.maxCostUsd ?? '0'
  if (r.max_operations !== undefined && n.ops + 1 > r.max_operations)
    return {
      rule: 'max_operations',
      message: `max_operations: the policy has sponsored ${n.ops} operations (reserved or settled); it allows ${r.max_operations}`,
    }
  if (r.max_spend_usd !== undefined && compareDecimal(addDecimal(n.spendUsd, cost), r.max_spend_usd) > 0)
    return {
      rule: 'max_spend_usd',
      message: `max_spend_usd: the policy has spent ${usd(n.spendUsd)} (settled, plus the maximum of unsettled signatures) and this operation may cost up to ${usd(cost)}; the policy allows ${usd(r.max_spend_usd)} in total`,
    }
  if (
    r.max_spend_per_sender_usd !== undefined &&
    compareDecimal(addDecimal(n.senderSpendUsd, cost), r.max_spend_per_sender_usd) > 0
  )
    return {
      rule: 'max_spend_per_sender_usd',
      message: `max_spend_per_sender_usd: sender ${f.sender} has spent ${usd(n.senderSpendUsd)} and this operation may cost up to ${usd(cost)}; the policy allows ${usd(r.max_spend_per_sender_usd)} per sender`,
    }
  if (r.max_per_user_per_day !== undefined && n.senderDayOps + 1 > r.max_per_user_per_day) {
    const nextDay = (Math.floor(f.nowMs / DAY_MS) + 1) * DAY_MS
    return {
      rule: 'max_per_user_per_day',
      message: `max_per_user_per_day: sender ${f.sender} has ${n.senderDayOps} sponsored operations on ${utcDay(f.nowMs)} (UTC); the policy allows ${r.max_per_user_per_day} per day`,
      retryAfterSeconds: Math.max(1, Math.ceil((nextDay - f.nowMs) / 1000)),
    }
  }
  if (r.rate_limit && n.windowCount >= r.rate_limit.limit) {
    const w = r.rate_limit.window_seconds
    return {
      rule: 'rate_limit',
      message: `rate_limit: the policy signed ${n.windowCount} operations in the current ${w} s window (until ${iso(n.windowEndMs)}); it allows ${r.rate_limit.limit} per window`,
      retryAfterSeconds: Math.max(1, Math.ceil((n.windowEndMs - f.nowMs) / 1000)),
    }
  }
  return null
}

const iso = (ms: number) => new Date(ms).toISOString()
