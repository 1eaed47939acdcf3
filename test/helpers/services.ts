import { describe, it } from 'vitest'

/**
 * Suites that need PostgreSQL or Redis, on a machine that may have neither (a newcomer's
 * `npm test`). Without the service such a suite is still collected and reported: its tests are
 * skipped and the reason is in its title, so the run shows what it did not test — never a file
 * without a suite, never a silent pass. The summary reporter (test/summary-reporter.ts) counts
 * the skipped tests per reason.
 */

/** An external service, named by the variable that points the tests at it. */
export type Service = 'DATABASE_URL' | 'REDIS_URL'

/** Why something needing `needs` cannot run here ("skipped: DATABASE_URL not set"); undefined when it can. */
export function skipReason(needs: readonly Service[]): string | undefined {
  const absent = needs.filter((n) => !process.env[n])
  return absent.length === 0 ? undefined : `skipped: ${absent.join(' and ')} not set`
}

/** The variable's value; only for code that runs when skipReason said the service is there. */
export function serviceUrl(name: Service): string {
  const url = process.env[name]
  if (!url) throw new Error(`${name} not set (this suite should have been skipped)`)
  return url
}

/** A describe block that needs `needs`; skipped, with the reason in its title, when one is absent. */
export function describeNeeding(needs: readonly Service[], title: string, fn: () => void): void {
  const reason = skipReason(needs)
  describe.skipIf(reason !== undefined)(reason ? `${title} (${reason})` : title, fn)
}

/** A test that needs `needs`; skipped, with the reason in its title, when one is absent. */
export function itNeeding(
  needs: readonly Service[],
  title: string,
  fn: () => Promise<void>,
  timeout?: number,
): void {
  const reason = skipReason(needs)
  it.skipIf(reason !== undefined)(reason ? `${title} (${reason})` : title, fn, timeout)
}

/** A case of describeEach: a storage backend, a limiter, a crash target… */
export interface ServiceCase {
  readonly name: string
  /** What the case needs beyond Node (PGlite and in-memory limits need nothing). */
  readonly needs?: readonly Service[]
}

/**
 * `describe.each` over cases of which some need a service: one describe block per case
 * (`$name` in the title is the case's name), each skipped with its reason when its service is
 * absent.
 */
export function describeEach<T extends ServiceCase>(
  cases: readonly T[],
  title: string,
  fn: (c: T) => void,
): void {
  for (const c of cases) describeNeeding(c.needs ?? [], title.replaceAll('$name', c.name), () => fn(c))
}
