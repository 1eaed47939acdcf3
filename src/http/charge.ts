import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Caller } from '../auth/service.ts'
import { HalyardError } from '../errors.ts'
import {
  decide,
  isUnlimited,
  type LimitCost,
  type LimitDecision,
  type RateLimiter,
} from '../limits/limiter.ts'
import type { Metrics } from '../metrics.ts'
import type { UsageRecorder } from '../usage/recorder.ts'

const NOTHING_USED = { second: 0, cu: 0, day: 0 }

/**
 * What X-RateLimit-Limit and -Remaining say when no requests-per-second limit applies
 * (enterprise, unless set per account). The header is documented as a number of requests per
 * second, and clients parse it as one: the largest 32-bit signed integer, a ceiling no window
 * reaches. Nothing is counted against it, so Remaining stays at it.
 */
export const UNLIMITED_RPS = 2 ** 31 - 1

const UNLIMITED_RPS_TEXT = String(UNLIMITED_RPS)

export function rateLimitHeaders(d: LimitDecision): Record<string, string> {
  return setRateLimitHeaders({}, d)
}

/** The rate-limit headers set on `headers` itself (the fast lane's: no object to merge per call). */
export function setRateLimitHeaders(
  headers: Record<string, string>,
  d: LimitDecision,
): Record<string, string> {
  const { limit, remaining } = d
  headers['x-ratelimit-limit'] = limit === null || limit === undefined ? UNLIMITED_RPS_TEXT : String(limit)
  headers['x-ratelimit-remaining'] =
    remaining === null || remaining === undefined ? UNLIMITED_RPS_TEXT : String(remaining)
  headers['x-ratelimit-reset'] = String(d.resetAt)
  return headers
}

function refusal(d: LimitDecision, computeUnits: number, caller: Caller): HalyardError {
  const limits = caller.limits
  let message: string
  if (d.exceeded === 'compute units per second' && d.neverFits) {
    message = `rate limit exceeded: this request costs ${computeUnits} compute units, more than the plan's ${limits.computeUnitsPerSecond} compute units per second`
  } else if (d.exceeded === 'compute units per second') {
    message = `rate limit exceeded: ${limits.computeUnitsPerSecond} compute units per second`
  } else if (d.exceeded === 'requests per day') {
    message = `rate limit exceeded: ${limits.requestsPerDay} requests per day`
  } else {
    message = `rate limit exceeded: ${limits.requestsPerSecond} requests per second`
  }
  return new HalyardError('rate_limited', message, {
    ...rateLimitHeaders(d),
    'retry-after': String(d.retryAfterSeconds ?? 1),
  })
}

/**
 * Counts one request and its compute units against the caller's account, sets the
 * rate-limit headers, and throws 429 when a limit is hit (a refused request costs nothing).
 */
export class Charger {
  /** Usage per account, day and method (src/usage): counted in memory here, flushed in batches. */
  private usage: UsageRecorder | undefined

  constructor(
    private readonly limiter: RateLimiter,
    private readonly metrics: Metrics,
  ) {}

  /** Set once by the usage feature (src/usage/register.ts) when it registers. */
  recordUsageInto(usage: UsageRecorder): void {
    this.usage = usage
  }

  /**
   * Resolves (or, with an in-process limiter, returns undefined at once: no promise on the hot
   * path) once charged; throws or rejects with the 429.
   */
  charge(
    request: FastifyRequest,
    reply: FastifyReply,
    computeUnits: number,
    requests = 1,
  ): Promise<void> | undefined {
    const caller = request.caller
    if (!caller) return undefined
    const d = this.decision(caller, { requests, computeUnits })
    if (d instanceof Promise) return d.then((x) => this.apply(request, reply, x, computeUnits, requests))
    this.apply(request, reply, d, computeUnits, requests)
    return undefined
  }

  /**
   * The limiter's decision, at once when no I/O is needed: an unlimited plan has nothing to
   * count against (no Redis round trip), an in-process limiter answers synchronously, and so
   * does the Redis limiter while the account's lease covers the call.
   */
  private decision(caller: Caller, cost: LimitCost): LimitDecision | Promise<LimitDecision> {
    if (isUnlimited(caller.limits)) return decide(caller.limits, cost, NOTHING_USED, Date.now())
    const limiter = this.limiter
    if (limiter.consumeSync) return limiter.consumeSync(caller.accountId, caller.limits, cost)
    return (
      limiter.tryConsumeSync?.(caller.accountId, caller.limits, cost) ??
      limiter.consume(caller.accountId, caller.limits, cost)
    )
  }

  private apply(
    request: FastifyRequest,
    reply: FastifyReply,
    decision: LimitDecision,
    computeUnits: number,
    requests: number,
  ) {
    request.charged = true
    reply.headers(rateLimitHeaders(decision))
    const route = request.routeOptions.url ?? 'unmatched'
    // Usage names the JSON-RPC method (set by the endpoint) or else the REST route.
    this.settle(
      request.caller as Caller,
      decision,
      computeUnits,
      route,
      request.metricMethod ?? `${request.method} ${route}`,
      requests,
    )
  }

  /** Counts an allowed decision's compute units, or throws the 429 (carrying the rate-limit headers). */
  private settle(
    caller: Caller,
    decision: LimitDecision,
    computeUnits: number,
    route: string,
    method = route,
    /** Usage counts what the limiter counted: 0 for a CU-only top-up of a request already charged. */
    requests = 1,
  ): LimitDecision {
    this.usage?.record(caller.accountId, method, requests, computeUnits, !decision.allowed)
    if (!decision.allowed) {
      this.metrics.rateLimited.inc({ limit: decision.exceeded ?? 'unknown' })
      throw refusal(decision, computeUnits, caller)
    }
    if (computeUnits > 0) this.metrics.recordComputeUnits(route, computeUnits)
    return decision
  }

  /**
   * Charges one request outside Fastify (the JSON-RPC fast lane, http/fast-lane.ts): the
   * decision, for the rate-limit headers, at once when no I/O is needed; throws or rejects with
   * the 429, whose headers include the rate-limit ones.
   */
  chargeDirect(
    caller: Caller,
    computeUnits: number,
    route: string,
    method = route,
  ): LimitDecision | Promise<LimitDecision> {
    const d = this.decision(caller, { requests: 1, computeUnits })
    if (d instanceof Promise) return d.then((x) => this.settle(caller, x, computeUnits, route, method))
    return this.settle(caller, d, computeUnits, route, method)
  }

  /** An identified caller's request refused before its charge: one request, no compute units (headers only). */
  async headersForRefusal(caller: Caller): Promise<Record<string, string>> {
    try {
      return rateLimitHeaders(await this.decision(caller, { requests: 1, computeUnits: 0 }))
    } catch {
      // The limiter being down must not turn a 4xx into a 500.
      return {}
    }
  }

  /**
   * Charges an identified caller outside an HTTP request (WebSocket upgrades, messages and
   * pushes): the same accounting as `charge`, but a refusal is returned (as the 429 error to
   * report) instead of thrown, so a socket can answer it and stay open.
   */
  async chargeCaller(
    caller: Caller,
    computeUnits: number,
    requests: number,
    route: string,
  ): Promise<{ decision: LimitDecision; refusal?: HalyardError }> {
    const decision = await this.decision(caller, { requests, computeUnits })
    this.usage?.record(caller.accountId, route, requests, computeUnits, !decision.allowed)
    if (!decision.allowed) {
      this.metrics.rateLimited.inc({ limit: decision.exceeded ?? 'unknown' })
      return { decision, refusal: refusal(decision, computeUnits, caller) }
    }
    if (computeUnits > 0) this.metrics.recordComputeUnits(route, computeUnits)
    return { decision }
  }

  /** For error responses to identified callers: count the request, no compute units, headers only. */
  async headersForError(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const caller = request.caller
    if (!caller || request.charged) return
    request.charged = true
    reply.headers(await this.headersForRefusal(caller))
  }
}
