import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Caller } from '../auth/service.ts'
import { HalyardError } from '../errors.ts'
import { decide, type LimitDecision, type RateLimiter } from '../limits/limiter.ts'
import type { PlanLimits } from '../limits/plans.ts'
import type { Metrics } from './metrics.ts'

const NOTHING_USED = { second: 0, cu: 0, day: 0 }

const isUnlimited = (l: PlanLimits) =>
  l.requestsPerSecond === null && l.requestsPerDay === null && l.computeUnitsPerSecond === null

export function rateLimitHeaders(d: LimitDecision): Record<string, string> {
  return {
    'x-ratelimit-limit': d.limit === null ? 'unlimited' : String(d.limit),
    'x-ratelimit-remaining': d.remaining === null ? 'unlimited' : String(d.remaining),
    'x-ratelimit-reset': String(d.resetAt),
  }
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
  return new HalyardError('rate_limited', message, { 'retry-after': String(d.retryAfterSeconds ?? 1) })
}

/**
 * Counts one request and its compute units against the caller's account, sets the
 * rate-limit headers, and throws 429 when a limit is hit (a refused request costs nothing).
 */
export class Charger {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly metrics: Metrics,
  ) {}

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
    const cost = { requests, computeUnits }
    // Nothing to count against (enterprise): no limiter round trip, Redis or not.
    if (isUnlimited(caller.limits)) {
      this.apply(request, reply, decide(caller.limits, cost, NOTHING_USED, Date.now()), computeUnits)
      return undefined
    }
    if (this.limiter.consumeSync) {
      this.apply(
        request,
        reply,
        this.limiter.consumeSync(caller.accountId, caller.limits, cost),
        computeUnits,
      )
      return undefined
    }
    return this.limiter
      .consume(caller.accountId, caller.limits, cost)
      .then((d) => this.apply(request, reply, d, computeUnits))
  }

  private apply(request: FastifyRequest, reply: FastifyReply, decision: LimitDecision, computeUnits: number) {
    const caller = request.caller as Caller
    request.charged = true
    reply.headers(rateLimitHeaders(decision))
    if (!decision.allowed) {
      this.metrics.rateLimited.inc({ limit: decision.exceeded ?? 'unknown' })
      throw refusal(decision, computeUnits, caller)
    }
    if (computeUnits > 0)
      this.metrics.computeUnits.inc({ route: request.routeOptions.url ?? 'unmatched' }, computeUnits)
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
    const decision = await this.limiter.consume(caller.accountId, caller.limits, { requests, computeUnits })
    if (!decision.allowed) {
      this.metrics.rateLimited.inc({ limit: decision.exceeded ?? 'unknown' })
      return { decision, refusal: refusal(decision, computeUnits, caller) }
    }
    if (computeUnits > 0) this.metrics.computeUnits.inc({ route }, computeUnits)
    return { decision }
  }

  /** For error responses to identified callers: count the request, no compute units, headers only. */
  async headersForError(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const caller = request.caller
    if (!caller || request.charged) return
    request.charged = true
    try {
      const d = await this.limiter.consume(caller.accountId, caller.limits, { requests: 1, computeUnits: 0 })
      reply.headers(rateLimitHeaders(d))
    } catch {
      // The limiter being down must not turn a 4xx into a 500.
    }
  }
}
