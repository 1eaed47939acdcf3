/**
 * npm run bench:request-log — what the request explorer's recorder (src/requests/recorder.ts)
 * costs per gateway request, in-process and CPU-only, steadier than req/s on a loaded machine:
 *   counted only     the account's budget for the interval is spent (the steady state under
 *                    load): the per-key counts, nothing kept
 *   kept             within budget: counted, and the row built (params and answer redacted, capped)
 *   flush, per row   writing kept rows to an embedded PGlite (in this process, as a single
 *                    Halyard on PGlite does; PostgreSQL does that work in its own process)
 * The request is a cached eth_chainId answer, the commonest on the fast lane. Best of BENCH_ROUNDS (5).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Caller } from '../src/auth/service.ts'
import type { Network } from '../src/chains/registry.ts'
import { createLogger } from '../src/logger.ts'
import {
  DEFAULT_ACCOUNT_BUDGET,
  DEFAULT_TOTAL_BUDGET,
  type GatewayExchange,
  RequestRecorder,
} from '../src/requests/recorder.ts'
import { describeMethod } from '../src/rpc/methods/registry.ts'
import { openStorage } from '../src/storage/database.ts'
import { migrate } from '../src/storage/migrate.ts'

const CALLS = Number(process.env.BENCH_CALLS ?? 200_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)

const caller = {
  keyId: 'key_bench',
  env: 'test',
  scopes: new Set(),
  accountId: 'acct_bench',
  email: 'bench@bench.local',
  plan: 'bench',
  limits: { requestsPerSecond: null, requestsPerDay: null, computeUnitsPerSecond: null },
  unlimited: true,
} as Caller
const network = { slug: 'ethereum-devnet', kind: 'evm' } as Network
const body = { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }
const exchange = (i: number): GatewayExchange => ({
  at: Date.now(),
  caller,
  surface: 'JSON-RPC',
  network,
  requestId: `bench-${i}`,
  status: 200,
  latencyMs: 0.2,
  origin: undefined,
  body,
  batch: false,
  slots: undefined,
  codes: undefined,
  answer: '{"jsonrpc":"2.0","id":1,"result":"0x7a69"}',
  error: undefined,
})

const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-bench-log-'))
const storage = await openStorage({ dataDir })
await migrate(storage.db)
const label = (x: GatewayExchange, m: string) => describeMethod(x.network.kind, m).label
const logger = createLogger('silent')
const counting = new RequestRecorder(storage.db, logger, { label, accountBudget: 0, totalBudget: 0 })
const keeping = new RequestRecorder(storage.db, logger, {
  label,
  accountBudget: Number.MAX_SAFE_INTEGER,
  totalBudget: Number.MAX_SAFE_INTEGER,
})

/** Mean ns per record(). */
function time(r: RequestRecorder, n: number): number {
  const started = performance.now()
  for (let i = 0; i < n; i++) r.record(exchange(i))
  return ((performance.now() - started) * 1e6) / n
}

let countedNs = Number.POSITIVE_INFINITY
let keptNs = Number.POSITIVE_INFINITY
let flushUs = Number.POSITIVE_INFINITY
const KEPT = 10_000
for (let round = 0; round < ROUNDS; round++) {
  countedNs = Math.min(countedNs, time(counting, CALLS))
  keptNs = Math.min(keptNs, time(keeping, KEPT))
  const started = performance.now()
  await keeping.flush()
  flushUs = Math.min(flushUs, ((performance.now() - started) * 1000) / KEPT)
}
// The exchange object itself is what the lane allocates per request with recording on.
const baseline = (() => {
  let sink = 0
  const started = performance.now()
  for (let i = 0; i < CALLS; i++) sink += exchange(i).status
  return sink > 0 ? ((performance.now() - started) * 1e6) / CALLS : 0
})()
console.log(
  `bench:request-log — best of ${ROUNDS}; load average ${(await import('node:os')).loadavg()[0]?.toFixed(2)}`,
)
const beyond = (ns: number) => Math.max(0, ns - baseline).toFixed(0)
console.log(`  the bench making an exchange object:   ${baseline.toFixed(0)} ns (the lane's own costs less)`)
console.log(`  record(), counted only (budget spent): ${beyond(countedNs)} ns per request beyond that`)
console.log(`  record(), kept (row built):            ${beyond(keptNs)} ns per request beyond that`)
console.log(`  flush to PGlite, per kept row:         ${flushUs.toFixed(1)} µs`)
const perS = (rows: number) => ((rows * (keptNs / 1000 + flushUs)) / 1000).toFixed(1)
console.log(
  `  kept rows' cost at the default budgets: ${perS(DEFAULT_ACCOUNT_BUDGET / 2)} ms CPU per second for one busy account, at most ${perS(DEFAULT_TOTAL_BUDGET / 2)} ms for all, whatever the request rate`,
)
await counting.stop()
await keeping.stop()
await storage.close()
rmSync(dataDir, { recursive: true, force: true })
