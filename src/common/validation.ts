import type { z } from 'zod'

/** Turns a zod error into one line per problem, each naming the field path. */
export function describeZodError(err: z.ZodError, root = ''): string {
  return err.issues
    .map((issue) => {
      const path = [root, ...issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))]
        .filter(Boolean)
        .join('.')
        .replace(/\.\[/g, '[')
      return `${path || '(root)'}: ${issue.message}`
    })
    .join('; ')
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

const DURATION_UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** Milliseconds of a duration such as `500ms`, `10s`, `1m` or `6h`; one reading for every setting. */
export function parseDuration(text: string): number {
  const m = /^(\d+)(ms|s|m|h)$/.exec(text.trim())
  if (!m) throw new ConfigError(`invalid duration "${text}"`)
  return Number(m[1]) * (DURATION_UNIT_MS[m[2] as string] as number)
}
