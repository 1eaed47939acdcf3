import path from 'node:path'
import { z } from 'zod'
import { ConfigError, describeZodError, parseDuration } from '../common/validation.ts'
import { parseCidr } from '../net/address-policy.ts'
import { databaseEnvShape } from '../storage/pg-pool.ts'
import { pgliteEnvShape } from '../storage/pglite-settings.ts'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

const envSchema = z.object({
  HALYARD_HOST: z.string().min(1).default('127.0.0.1'),
  HALYARD_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HALYARD_DATA_DIR: z.string().min(1).default('./.halyard'),
  HALYARD_CONFIG: z.string().min(1).optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional(),
  // How long a rate-limit decision waits for Redis before it is taken without it, and what that
  // is (docs/dependency-failures.md): a local allowance per process, or 503 + Retry-After.
  HALYARD_REDIS_TIMEOUT: z
    .string()
    .regex(/^[1-9]\d*(ms|s)$/, 'must be a duration such as 500ms or 1s')
    .transform(parseDuration)
    .default(500),
  HALYARD_REDIS_FALLBACK: z
    .enum(['local', 'closed'], { message: 'must be local or closed' })
    .default('local'),
  // Instances sharing the Redis: each process's local allowance is the plan's limits divided by
  // this × HALYARD_WORKERS.
  HALYARD_REDIS_FALLBACK_INSTANCES: z.coerce.number().int().min(1).max(10_000).default(1),
  HALYARD_SECRET_KEY: z
    .string()
    .regex(/^(0x)?[0-9a-fA-F]{64}$/, 'must be 32 bytes as 64 hex digits')
    .optional(),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL')
    .optional(),
  HALYARD_LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  // Where users reach Halyard (docs/behind-a-proxy.md): e-mailed sign-in links and the dashboard's
  // Host and Origin checks use it, never what a request says. Kept as its origin (no trailing /).
  HALYARD_PUBLIC_URL: z
    .string()
    .transform((raw, c) => {
      const origin = publicOrigin(raw)
      if (origin === undefined) {
        c.addIssue({
          code: 'custom',
          message:
            'must be scheme://host[:port] with http or https and nothing after the host, e.g. https://halyard.example.com',
        })
        return z.NEVER
      }
      return origin
    })
    .optional(),
  // Proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (src/net/forwarded.ts).
  HALYARD_TRUSTED_PROXIES: z
    .string()
    .transform((raw, c) => {
      const list = raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
      const bad = list.find((s) => parseCidr(s) === null)
      if (bad !== undefined) {
        c.addIssue({
          code: 'custom',
          message: `"${bad.slice(0, 100)}" is not an IP address or CIDR range (e.g. 10.0.0.0/8,127.0.0.1,::1)`,
        })
        return z.NEVER
      }
      return list
    })
    .default([]),
  // `halyard serve` processes on one port (src/server/cluster.ts); above 1 needs DATABASE_URL and REDIS_URL.
  HALYARD_WORKERS: z.coerce.number().int().min(1).max(64).default(1),
  // Deadline for a request's headers and body to arrive (src/server/app.ts), in milliseconds.
  HALYARD_REQUEST_TIMEOUT: z
    .string()
    .regex(/^[1-9]\d*(ms|s|m)$/, 'must be a duration such as 30s or 1500ms')
    .transform(parseDuration)
    .default(30_000),
  // 0 sends every request through Fastify's pipeline (src/http/fast-lane.ts); for comparisons.
  HALYARD_FAST_LANE: z.enum(['0', '1'], { message: 'must be 0 or 1' }).default('1'),
  // The request explorer (src/requests): off records nothing (for comparisons, see bench:rpc).
  HALYARD_REQUEST_LOG: z.enum(['on', 'off'], { message: 'must be on or off' }).default('on'),
  // How long recorded requests are kept, e.g. 24h, 90m; at most 30 days (720h).
  HALYARD_REQUEST_LOG_RETENTION: z
    .string()
    .regex(/^[1-9]\d*(s|m|h)$/, 'must be a duration such as 24h, 90m or 3600s')
    .transform(parseDuration)
    .refine((ms) => ms >= 60_000 && ms <= 720 * 3_600_000, 'must be between 1m and 720h (30 days)')
    .default(24 * 3_600_000),
  // Webhook delivery (src/webhooks/settings.ts): durations like 500ms, 10s, 1m, 6h.
  HALYARD_WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\d+(ms|s|m|h)(,\d+(ms|s|m|h))*$/, 'must be comma-separated durations such as 10s,1m,10m,1h,6h')
    .optional(),
  // Form B's retry delays (default 1s,5s,30s,5m,30m,2h,8h).
  HALYARD_WEBHOOK_RETRY_SCHEDULE_B: z
    .string()
    .regex(/^\d+(ms|s|m|h)(,\d+(ms|s|m|h))*$/, 'must be comma-separated durations such as 1s,5s,30s,5m')
    .optional(),
  // Per-plan webhook limits (src/webhooks/quota.ts), e.g. free=1000,growth=100000,enterprise=unlimited.
  HALYARD_WEBHOOK_DAILY_DELIVERIES: z.string().optional(),
  HALYARD_WEBHOOK_MAX_WEBHOOKS: z.string().optional(),
  HALYARD_WEBHOOK_TIMEOUT: z
    .string()
    .regex(/^\d+(ms|s|m)$/, 'must be a duration such as 15s or 500ms')
    .optional(),
  HALYARD_WEBHOOK_ALLOW_CIDRS: z.string().optional(),
  HALYARD_WEBHOOK_HOSTS: z.string().optional(),
  HALYARD_WEBHOOK_CA_FILE: z.string().optional(),
  HALYARD_WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(4096).optional(),
  HALYARD_WEBHOOK_PER_HOST: z.coerce.number().int().min(1).max(4096).optional(),
  // How long an idle delivery worker sleeps between claims when nothing wakes it (default 100ms,
  // backing off to 1s); new work, here or on another instance, wakes it at once (src/webhooks/cross-wake.ts).
  HALYARD_WEBHOOK_POLL_INTERVAL: z
    .string()
    .regex(/^[1-9]\d*(ms|s|m)$/, 'must be a duration such as 100ms or 5s')
    .optional(),
  // off: this instance serves the webhook API and matches blocks but sends nothing (other instances deliver).
  HALYARD_WEBHOOK_DELIVERY: z.enum(['on', 'off'], { message: 'must be on or off' }).default('on'),
  // Accounts whose keys are the operator (operator controls such as debug_bundler_*), comma-separated e-mails.
  HALYARD_OPERATOR_EMAILS: z
    .string()
    .transform((v) => v.split(',').map((e) => e.trim().toLowerCase()))
    .refine(
      (list) => list.every((e) => /^[^\s@]+@[^\s@]+$/.test(e)),
      'must be comma-separated e-mail addresses',
    )
    .optional(),
  // This process's name in webhook delivery attempts (default hostname:pid).
  HALYARD_INSTANCE_ID: z.string().min(1).max(200).optional(),
  // Database deadlines (src/storage/pg-pool.ts; docs/dependency-failures.md).
  ...databaseEnvShape,
  // How long a key verified before is served while the database cannot be asked (0: never).
  HALYARD_KEY_STALE_MS: z.coerce.number().int().min(0).max(86_400_000).default(300_000),
  // Embedded PGlite's memory settings and template cache dir (src/storage/pglite-settings.ts).
  ...pgliteEnvShape,
})

export type Env = Readonly<z.infer<typeof envSchema> & { dataDir: string }>

/** The origin of an http(s) URL with nothing after its host (a lone trailing / is fine), else undefined. */
function publicOrigin(raw: string): string | undefined {
  let u: URL
  try {
    u = new URL(raw.trim())
  } catch {
    return undefined
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined
  if (u.username || u.password || u.search || u.hash || (u.pathname !== '/' && u.pathname !== ''))
    return undefined
  if (/[?#]$/.test(raw.trim())) return undefined
  return u.origin
}

/** Reads and validates the environment once; empty strings count as unset. */
export function loadEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const picked: Record<string, string> = {}
  for (const key of Object.keys(envSchema.shape)) {
    const value = source[key]
    if (value !== undefined && value !== '') picked[key] = value
  }
  const parsed = envSchema.safeParse(picked)
  if (!parsed.success) throw new ConfigError(`invalid environment: ${describeZodError(parsed.error)}`)
  return Object.freeze({ ...parsed.data, dataDir: path.resolve(parsed.data.HALYARD_DATA_DIR) })
}
