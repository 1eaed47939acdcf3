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
