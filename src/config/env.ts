import path from 'node:path'
import { z } from 'zod'
import { ConfigError, describeZodError, parseDuration } from '../common/validation.ts'
import { parseCidr } from '../net/address-policy.ts'
import { databaseEnvShape } from '../storage/pg-pool.ts'
import { pgliteEnvShape } from '../storage/pglite-settings.ts'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

export const envSchema = z.object({
  HALYARD_HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .describe('Address to listen on (`0.0.0.0` in the container image).'),
  HALYARD_PORT: z.coerce.number().int().min(0).max(65535).default(8080).describe('Port to listen on.'),
  HALYARD_DATA_DIR: z
    .string()
    .min(1)
    .default('./.halyard')
    .describe('Where the embedded PGlite database and other local state live when DATABASE_URL is not set.'),
  HALYARD_CONFIG: z
    .string()
    .min(1)
    .optional()
    .describe('Path of the config file (`--config FILE` overrides it).'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional()
    .describe('PostgreSQL to use instead of the embedded PGlite; required for several instances or workers.'),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional()
    .describe('Redis for rate limits and the RPC cache, so that several instances share them.'),
  HALYARD_REDIS_TIMEOUT: z
    .string()
    .regex(/^[1-9]\d*(ms|s)$/, 'must be a duration such as 500ms or 1s')
    .transform(parseDuration)
    .prefault('500ms')
    .describe('How long a rate-limit decision waits for Redis before it is taken without it.'),
  HALYARD_REDIS_FALLBACK: z
    .enum(['local', 'closed'], { message: 'must be local or closed' })
    .default('local')
    .describe(
      'What a rate-limit decision is without Redis: `local`, a local allowance per process, or `closed`, 503 with Retry-After.',
    ),
  HALYARD_REDIS_FALLBACK_INSTANCES: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(1)
    .describe(
      "Instances sharing the Redis: each process's local allowance is the plan's limits divided by this × HALYARD_WORKERS.",
    ),
  HALYARD_SECRET_KEY: z
    .string()
    .regex(/^(0x)?[0-9a-fA-F]{64}$/, 'must be 32 bytes as 64 hex digits')
    .optional()
    .describe(
      'Key that encrypts stored secrets such as webhook signing secrets: 32 bytes as 64 hex digits; required by `serve`. Keep it: without it the stored secrets cannot be read.',
    ),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL')
    .optional()
    .describe(
      'Mail server for sign-in links and notices (smtp:// or smtps://); without it nothing is sent (messages wait in the outbox).',
    ),
  HALYARD_LOG_LEVEL: z
    .enum(LOG_LEVELS)
    .default('info')
    .describe('Least severe log line written (JSON lines on stdout).'),
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
    .optional()
    .describe(
      "Where users reach Halyard (scheme://host[:port]); e-mailed sign-in links and the dashboard's Host and Origin checks use it, never what a request says.",
    ),
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
    .default([])
    .describe(
      'Comma-separated addresses or CIDR ranges of reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (see behind-a-proxy.md).',
    ),
  HALYARD_WORKERS: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(1)
    .describe('`halyard serve` processes on one port; above 1 needs DATABASE_URL and REDIS_URL.'),
  HALYARD_REQUEST_TIMEOUT: z
    .string()
    .regex(/^[1-9]\d*(ms|s|m)$/, 'must be a duration such as 30s or 1500ms')
    .transform(parseDuration)
    .prefault('30s')
    .describe("Deadline for a request's headers and body to arrive."),
  HALYARD_FAST_LANE: z
    .enum(['0', '1'], { message: 'must be 0 or 1' })
    .default('1')
    .describe(
      '0 sends every request through the full HTTP framework pipeline (for comparisons); 1 lets JSON-RPC calls take the fast path.',
    ),
  HALYARD_REQUEST_LOG: z
    .enum(['on', 'off'], { message: 'must be on or off' })
    .default('on')
    .describe('The request explorer: `off` records no requests (for comparisons, see bench:rpc).'),
  HALYARD_REQUEST_LOG_RETENTION: z
    .string()
    .regex(/^[1-9]\d*(s|m|h)$/, 'must be a duration such as 24h, 90m or 3600s')
    .transform(parseDuration)
    .refine((ms) => ms >= 60_000 && ms <= 720 * 3_600_000, 'must be between 1m and 720h (30 days)')
    .prefault('24h')
    .describe('How long recorded requests are kept (the request explorer), e.g. 24h or 90m; at most 720h.'),
  HALYARD_WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\d+(ms|s|m|h)(,\d+(ms|s|m|h))*$/, 'must be comma-separated durations such as 10s,1m,10m,1h,6h')
    .optional()
    .describe(
      'Delays between delivery attempts of a webhook event (comma-separated durations, e.g. 10s,1m,10m,1h,6h).',
    ),
  HALYARD_WEBHOOK_RETRY_SCHEDULE_B: z
    .string()
    .regex(/^\d+(ms|s|m|h)(,\d+(ms|s|m|h))*$/, 'must be comma-separated durations such as 1s,5s,30s,5m')
    .optional()
    .describe("Form B's retry delays (default 1s,5s,30s,5m,30m,2h,8h)."),
  HALYARD_WEBHOOK_DAILY_DELIVERIES: z
    .string()
    .optional()
    .describe('Deliveries per account per day by plan, e.g. free=1000,growth=100000,enterprise=unlimited.'),
  HALYARD_WEBHOOK_MAX_WEBHOOKS: z
    .string()
    .optional()
    .describe('Webhooks per account by plan, in the same form.'),
  HALYARD_WEBHOOK_TIMEOUT: z
    .string()
    .regex(/^\d+(ms|s|m)$/, 'must be a duration such as 15s or 500ms')
    .optional()
    .describe('Deadline of one delivery attempt (e.g. 15s).'),
  HALYARD_WEBHOOK_ALLOW_CIDRS: z
    .string()
    .optional()
    .describe(
      'Private address ranges webhooks may be delivered to (comma-separated CIDRs); every other private, loopback or link-local target is refused.',
    ),
  HALYARD_WEBHOOK_HOSTS: z
    .string()
    .optional()
    .describe(
      'Host overrides for webhook targets, host=ip,…; the address is still checked like a DNS answer.',
    ),
  HALYARD_WEBHOOK_CA_FILE: z
    .string()
    .optional()
    .describe('PEM file of extra certificate authorities trusted for webhook targets (a private CA).'),
  HALYARD_WEBHOOK_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(4096)
    .optional()
    .describe('Deliveries in flight at once per process.'),
  HALYARD_WEBHOOK_PER_HOST: z.coerce
    .number()
    .int()
    .min(1)
    .max(4096)
    .optional()
    .describe('Deliveries in flight at once per receiving host per process.'),
  HALYARD_WEBHOOK_POLL_INTERVAL: z
    .string()
    .regex(/^[1-9]\d*(ms|s|m)$/, 'must be a duration such as 100ms or 5s')
    .optional()
    .describe(
      'How long an idle delivery worker sleeps between claims when nothing wakes it (default 100ms, backing off to 1s); new work, on this instance or another, wakes it at once.',
    ),
  HALYARD_WEBHOOK_DELIVERY: z
    .enum(['on', 'off'], { message: 'must be on or off' })
    .default('on')
    .describe(
      '`off`: this instance serves the webhook API and matches blocks but sends nothing (other instances deliver).',
    ),
  HALYARD_OPERATOR_EMAILS: z
    .string()
    .transform((v) => v.split(',').map((e) => e.trim().toLowerCase()))
    .refine(
      (list) => list.every((e) => /^[^\s@]+@[^\s@]+$/.test(e)),
      'must be comma-separated e-mail addresses',
    )
    .optional()
    .describe(
      'Accounts whose keys are the operator (operator controls such as debug_bundler_*), comma-separated e-mails.',
    ),
  HALYARD_INSTANCE_ID: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe("This process's name in webhook delivery attempts (default hostname:pid)."),
  // Database deadlines (src/storage/pg-pool.ts; docs/dependency-failures.md).
  ...databaseEnvShape,
  HALYARD_KEY_STALE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(86_400_000)
    .default(300_000)
    .describe(
      'How long a key verified before is still accepted while the database cannot be asked (0: never).',
    ),
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
