import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { ConfigError, parseDuration } from '../common/validation.ts'
import type { Env } from '../config/env.ts'
import { CidrAllowlist } from '../net/address-policy.ts'
import type { Resolver } from '../net/safe-fetch.ts'
import { DEFAULT_SCHEDULE_MS, type DeliveryOptions } from './delivery-options.ts'
import { FORM_B_SCHEDULE_MS } from './form-b.ts'
import { DEFAULT_LIMITS, parsePlanLimits, type WebhookLimits } from './quota.ts'

/**
 * Delivery settings from the environment (validated once at start-up; a bad value names its
 * variable). The schedule is configurable so tests and staging can compress it:
 * HALYARD_WEBHOOK_RETRY_SCHEDULE=200ms,200ms,400ms,400ms,800ms.
 */
export interface WebhookSettings {
  delivery: DeliveryOptions
  devMode: boolean
  limits: WebhookLimits
}

/** `host=ip,host=ip` — fixed answers for chosen hosts (like curl --resolve); still policy-checked. */
export function staticHosts(text: string | undefined): Resolver | undefined {
  if (!text) return undefined
  const map = new Map<string, string>()
  for (const part of text.split(',').filter(Boolean)) {
    const [host, ip] = part.split('=').map((s) => s.trim())
    if (!host || !ip || isIP(ip) === 0) {
      throw new ConfigError(`invalid environment: HALYARD_WEBHOOK_HOSTS: "${part}" is not host=ip`)
    }
    map.set(host.toLowerCase(), ip)
  }
  return async (host) => {
    const ip = map.get(host.toLowerCase())
    if (ip) return [{ address: ip, family: isIP(ip) }]
    const { lookup } = await import('node:dns/promises')
    return lookup(host, { all: true, verbatim: true })
  }
}

export function webhookSettings(env: Env, devMode: boolean): WebhookSettings {
  let allowlist: CidrAllowlist | undefined
  const cidrs = (env.HALYARD_WEBHOOK_ALLOW_CIDRS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  try {
    if (cidrs.length) allowlist = new CidrAllowlist(cidrs)
  } catch (err) {
    throw new ConfigError(`invalid environment: HALYARD_WEBHOOK_ALLOW_CIDRS: ${(err as Error).message}`)
  }
  let ca: string | undefined
  if (env.HALYARD_WEBHOOK_CA_FILE) {
    try {
      ca = readFileSync(env.HALYARD_WEBHOOK_CA_FILE, 'utf8')
    } catch (err) {
      throw new ConfigError(`invalid environment: HALYARD_WEBHOOK_CA_FILE: ${(err as Error).message}`)
    }
  }
  const scheduleMs = env.HALYARD_WEBHOOK_RETRY_SCHEDULE
    ? env.HALYARD_WEBHOOK_RETRY_SCHEDULE.split(',').map(parseDuration)
    : DEFAULT_SCHEDULE_MS
  const scheduleBMs = env.HALYARD_WEBHOOK_RETRY_SCHEDULE_B
    ? env.HALYARD_WEBHOOK_RETRY_SCHEDULE_B.split(',').map(parseDuration)
    : FORM_B_SCHEDULE_MS
  const timeoutMs = env.HALYARD_WEBHOOK_TIMEOUT ? parseDuration(env.HALYARD_WEBHOOK_TIMEOUT) : 15_000
  // 0 would cut every attempt at once: each event would fail its way to a paused webhook.
  if (timeoutMs === 0)
    throw new ConfigError('invalid environment: HALYARD_WEBHOOK_TIMEOUT: must be above zero')
  const limits: WebhookLimits = {
    deliveriesPerDay: parsePlanLimits(
      'HALYARD_WEBHOOK_DAILY_DELIVERIES',
      env.HALYARD_WEBHOOK_DAILY_DELIVERIES,
      DEFAULT_LIMITS.deliveriesPerDay,
    ),
    webhooksPerAccount: parsePlanLimits(
      'HALYARD_WEBHOOK_MAX_WEBHOOKS',
      env.HALYARD_WEBHOOK_MAX_WEBHOOKS,
      DEFAULT_LIMITS.webhooksPerAccount,
    ),
  }
  return {
    devMode,
    limits,
    delivery: {
      timeoutMs,
      scheduleMs,
      scheduleBMs,
      concurrency: env.HALYARD_WEBHOOK_CONCURRENCY ?? 64,
      perHostCap: env.HALYARD_WEBHOOK_PER_HOST ?? 16,
      perLane: 25,
      pollMs: env.HALYARD_WEBHOOK_POLL_INTERVAL ? parseDuration(env.HALYARD_WEBHOOK_POLL_INTERVAL) : 100,
      maxResponseBytes: 16 * 1024,
      // Dev mode: a newcomer's receiver on the same machine, over http:// or https://.
      allowLoopback: devMode,
      allowlist,
      resolve: staticHosts(env.HALYARD_WEBHOOK_HOSTS),
      protocols: devMode ? ['http:', 'https:'] : ['https:'],
      ca,
    },
  }
}
