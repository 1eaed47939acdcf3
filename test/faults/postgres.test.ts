/**
 * The fault suite, PostgreSQL half (docs/dependency-failures.md): Halyard as a child process on
 * a private PostgreSQL, under a steady load of keyed JSON-RPC calls (known keys, and now and
 * then a key no database knows, whose answer needs a lookup), while PostgreSQL is restarted,
 * has its backends terminated one by one, or is frozen. Asserted: what clients saw (statuses
 * from the allowed set, never 500, every answer within the database deadline + 1 s, 503s with
 * Retry-After), nothing accepted lost or counted twice (usage rows = 200 answers), the process
 * alive and serving again once PostgreSQL is back. Timings are measured and printed, not asserted.
 * About a minute in all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AnvilProcess, startAnvil } from '../../src/devnet/anvil.ts'
import { until } from '../helpers/until.ts'
import {
  createFaultKeys,
  type FaultRow,
  type HalyardProcess,
  printFaultTable,
  startHalyardProcess,
  timeUntil,
  unknownKey,
} from './harness.ts'
import { type Outcome, startLoad, statusCounts } from './load.ts'
import { type PrivatePostgres, privatePostgresSkipReason, startPrivatePostgres } from './private-postgres.ts'

/** HALYARD_DB_TIMEOUT_MS for the child: short, so a freeze outlasts it several times. */
const DEADLINE_MS = 2_000
const ALLOWED: Record<string, readonly number[]> = { known: [200, 503], unknown: [401, 503] }
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface FaultResult {
  row: FaultRow
  outcomes: Outcome[]
  alive: boolean
  lost: number
  duplicated: number
  recoveryMs: number | undefined
}

const rows: FaultRow[] = []
const skip = privatePostgresSkipReason()

describe.skipIf(skip !== undefined)(`PostgreSQL faults under load${skip ? ` (${skip})` : ''}`, () => {
  let anvil: AnvilProcess
  beforeAll(async () => {
    anvil = await startAnvil()
  })
  afterAll(async () => {
    await anvil?.stop()
    if (rows.length > 0) printFaultTable(`PostgreSQL faults (HALYARD_DB_TIMEOUT_MS=${DEADLINE_MS})`, rows)
  })

  /** Runs `inject` (which resolves when PostgreSQL is back) under load and measures what it did. */
  async function underLoad(
    fault: string,
    inject: (pg: PrivatePostgres, h: HalyardProcess) => Promise<number>,
  ): Promise<FaultResult> {
    const pg = await startPrivatePostgres()
    try {
      const { keys, accountIds } = await createFaultKeys(pg.url, 3)
      const h = await startHalyardProcess({
        upstreamUrl: anvil.url,
        env: { DATABASE_URL: pg.url, HALYARD_DB_TIMEOUT_MS: String(DEADLINE_MS), HALYARD_LOG_LEVEL: 'warn' },
      })
      const rpcUrl = `${h.baseUrl}/rpc/ethereum/devnet`
      const post = (key: string) => ({
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      })
      // The indexer follows the network under its session lock: the connection the fault must not crash.
      const lockHeld = async () =>
        (
          await pg.query<{ n: number }>(
            `select count(*)::int as n from pg_locks where locktype = 'advisory' and granted`,
          )
        )[0]?.n ?? 0
      await until('the indexer to take its lock', async () => (await lockHeld()) > 0)
      const load = startLoad({
        next: (i) =>
          i % 10 === 9
            ? { kind: 'unknown', url: rpcUrl, init: post(unknownKey()) }
            : { kind: 'known', url: rpcUrl, init: post(keys[i % keys.length] as string) },
        concurrency: 4,
        pauseMs: 10,
      })
      await sleep(1_500)
      const backAt = await inject(pg, h)
      // Serving again: a never-seen key is refused (401), which takes a lookup in the database.
      const recoveryMs = await timeUntil(
        backAt,
        async () =>
          (await fetch(rpcUrl, { ...post(unknownKey()), signal: AbortSignal.timeout(5_000) })).status === 401,
        15_000,
      )
      const lockMs = await timeUntil(backAt, async () => (await lockHeld()) > 0, 15_000)
      await sleep(1_000)
      await load.stop()
      const alive = h.alive()
      const exit = h.exit()
      await h.stop()
      const [usage] = await pg.query<{ n: number }>(
        'select coalesce(sum(requests), 0)::int as n from usage_daily where account_id = any($1)',
        [accountIds],
      )
      const counted = usage?.n ?? 0
      const outcomes = load.outcomes
      const served = outcomes.filter((o) => o.kind === 'known' && o.status === 200).length
      const slowest = Math.max(...outcomes.map((o) => o.ms))
      const lost = Math.max(0, served - counted)
      const duplicated = Math.max(0, counted - served)
      const fmt = (ms: number | undefined) =>
        ms === undefined ? 'never (15 s)' : `${(ms / 1000).toFixed(2)} s`
      const row: FaultRow = {
        fault,
        seen: `${statusCounts(outcomes)}; slowest ${(slowest / 1000).toFixed(2)} s`,
        lost,
        duplicated,
        recovery: `serving ${fmt(recoveryMs)}, lock ${fmt(lockMs)}`,
        process: alive ? 'alive' : `died (${exit})`,
      }
      rows.push(row)
      console.log(`${fault}: ${JSON.stringify(row)}`)
      return { row, outcomes, alive, lost, duplicated, recoveryMs }
    } finally {
      await pg.stop()
    }
  }

  function expectSurvived(r: FaultResult): void {
    expect(r.alive, 'Halyard survived').toBe(true)
    const wrong = r.outcomes.filter(
      (o) => typeof o.status !== 'number' || !ALLOWED[o.kind]?.includes(o.status),
    )
    expect(wrong.slice(0, 5), 'statuses outside the allowed set (no 500, no unanswered request)').toEqual([])
    expect(
      r.outcomes.filter((o) => o.status === 503 && !o.retryAfter).slice(0, 5),
      '503 carries Retry-After',
    ).toEqual([])
    // The one bound the service promises: no request waits longer than the database deadline + 1 s.
    const late = r.outcomes.filter((o) => o.ms > DEADLINE_MS + 1_000)
    expect(late.slice(0, 5), `answers later than ${DEADLINE_MS + 1_000} ms`).toEqual([])
    expect(r.lost, 'accepted requests not counted').toBe(0)
    expect(r.duplicated, 'requests counted twice').toBe(0)
    expect(r.recoveryMs, 'serving again once PostgreSQL is back').toBeDefined()
  }

  it('PostgreSQL fast restart: the process lives on and serves again', async () => {
    const r = await underLoad('PostgreSQL fast restart', async (pg) => (await pg.restart()).upAt)
    expectSurvived(r)
  }, 120_000)

  it("pg_terminate_backend of each of Halyard's backends in turn", async () => {
    const r = await underLoad('pg_terminate_backend, each backend in turn', async (pg) => {
      const pids = await pg.query<{ pid: number }>(
        `select pid from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()`,
      )
      expect(pids.length).toBeGreaterThan(0)
      for (const { pid } of pids) {
        await pg.query('select pg_terminate_backend($1)', [pid])
        await sleep(300)
      }
      return Date.now()
    })
    expectSurvived(r)
  }, 120_000)

  it('PostgreSQL frozen (SIGSTOP for three deadlines, then SIGCONT)', async () => {
    const r = await underLoad('PostgreSQL frozen 6 s', async (pg) => {
      pg.freeze()
      await sleep(3 * DEADLINE_MS)
      pg.thaw()
      return Date.now()
    })
    expectSurvived(r)
    // Known keys kept being served from the stale window while the database slept.
    expect(r.outcomes.some((o) => o.kind === 'known' && o.status === 200)).toBe(true)
  }, 120_000)
})
