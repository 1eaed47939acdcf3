import { invalidRequest } from '../errors.ts'

export interface Page {
  page: number
  limit: number
}

/**
 * Spec section 4: `page` (default 1) and `limit` (default per endpoint, maximum 100). Anything
 * but a plain decimal integer in range is a 400 naming the parameter; a page past the end is
 * a valid, empty page.
 */
export function parsePage(query: unknown, defaultLimit: number): Page {
  const q = (query ?? {}) as Record<string, unknown>
  return {
    page: intParam(q.page, 'page', 1, 1_000_000, 1),
    limit: intParam(q.limit, 'limit', 1, 100, defaultLimit),
  }
}

function intParam(v: unknown, name: string, min: number, max: number, dflt: number): number {
  if (v === undefined) return dflt
  const range = max === 100 ? `between ${min} and ${max}` : `of at least ${min}`
  if (typeof v !== 'string' || !/^\d{1,9}$/.test(v))
    throw invalidRequest(`${name} must be an integer ${range}`)
  const n = Number(v)
  if (n < min || n > max) throw invalidRequest(`${name} must be an integer ${range} (got ${n})`)
  return n
}

export function slicePage<T>(items: readonly T[], p: Page): T[] {
  const start = (p.page - 1) * p.limit
  return items.slice(start, start + p.limit)
}
