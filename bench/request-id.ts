/**
 * npm run bench:request-id — what an answer's new X-Request-Id costs (src/http/request-id.ts)
 * against `crypto.randomUUID()`, the baseline, in the same run: each makes an id and passes it
 * through Node's own header-value check (`http.validateHeaderValue`, what `writeHead` runs on
 * every header), because that check is where randomUUID's joined string is flattened again.
 * BENCH_IDS per round (default 1,000,000), BENCH_ROUNDS rounds (default 7), the two alternated
 * within each round; prints the median ns per id of each and their ratio. In-process, CPU only.
 */
import { randomUUID } from 'node:crypto'
import { validateHeaderValue } from 'node:http'
import { loadavg } from 'node:os'
import { newRequestId } from '../src/http/request-id.ts'

const IDS = Number(process.env.BENCH_IDS ?? 1_000_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)

/** ns per id: make one, check it as a header value. */
function time(make: () => string): number {
  const started = process.hrtime.bigint()
  for (let i = 0; i < IDS; i++) validateHeaderValue('x-request-id', make())
  return Number(process.hrtime.bigint() - started) / IDS
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const rows = { 'crypto.randomUUID': [] as number[], newRequestId: [] as number[] }
console.log(
  `bench:request-id — ${IDS} ids per round, ${ROUNDS} rounds (load average ${loadavg()[0]!.toFixed(2)})`,
)
for (let r = 0; r < ROUNDS; r++) {
  // Alternate which goes first, so neither always meets the machine's state the other left.
  const order =
    r % 2 === 0
      ? (['crypto.randomUUID', 'newRequestId'] as const)
      : (['newRequestId', 'crypto.randomUUID'] as const)
  for (const name of order) rows[name].push(time(name === 'newRequestId' ? newRequestId : randomUUID))
}
const base = median(rows['crypto.randomUUID'])
const ours = median(rows.newRequestId)
console.log(
  `  crypto.randomUUID  ${base.toFixed(0)} ns per id (median; rounds ${rows['crypto.randomUUID'].map((x) => x.toFixed(0)).join(', ')})`,
)
console.log(
  `  newRequestId       ${ours.toFixed(0)} ns per id (median; rounds ${rows.newRequestId.map((x) => x.toFixed(0)).join(', ')})`,
)
console.log(
  `  newRequestId / crypto.randomUUID: ${(ours / base).toFixed(2)}× the time (load average ${loadavg()[0]!.toFixed(2)} after)`,
)
