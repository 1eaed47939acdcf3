/**
 * npm run bench:cache — what one `set` costs the RPC result cache (src/rpc/cache-store.ts) when
 * it is full and every insert evicts, against the same cache while it still has room. The target:
 * eviction must be O(1), so full stays within 3× of empty (it was ~50× with a Map scan).
 *
 * Entries are balance-sized (a ~90-byte key, a ~20-byte hex quantity), the budget is the
 * service default (64 MiB, ~600k such entries). Each row times BENCH_SETS new keys after a
 * warm-up; the best of BENCH_ROUNDS rounds (default 5) is printed, so a stray GC pause or a
 * busy neighbour does not decide it.
 * In-process and CPU-only: no servers, no network.
 */
import { MemoryResultCache } from '../src/rpc/cache-store.ts'
import { DEFAULT_CACHE_MAX_BYTES } from '../src/rpc/service.ts'

const SETS = Number(process.env.BENCH_SETS ?? 200_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)

let serial = 0
const key = () =>
  `ethereum-devnet:eth_getBalance:["0x${(serial++).toString(16).padStart(40, '0')}","0x1312d00"]`
const value = () => `"0x${(serial * 7919).toString(16).padStart(16, '0')}"`

/** Mean µs per set over SETS fresh keys. */
function timeSets(cache: MemoryResultCache): number {
  const keys = Array.from({ length: SETS }, key)
  const values = keys.map(value)
  const started = performance.now()
  for (let i = 0; i < SETS; i++) cache.set(keys[i]!, values[i]!)
  return ((performance.now() - started) * 1000) / SETS
}

function fill(cache: MemoryResultCache): void {
  while (cache.usedBytes + 200 < cache.maxBytes) cache.set(key(), value())
  // A few more so the next set is sure to evict.
  for (let i = 0; i < 1_000; i++) cache.set(key(), value())
}

/** npm run bench:cache passes --expose-gc: each round starts without the last one's garbage. */
const collect = (globalThis as { gc?: () => void }).gc ?? (() => {})

function best(run: () => number): number {
  let min = Number.POSITIVE_INFINITY
  for (let r = 0; r < ROUNDS; r++) {
    collect()
    min = Math.min(min, run())
  }
  return min
}

timeSets(new MemoryResultCache(DEFAULT_CACHE_MAX_BYTES)) // warm-up (JIT)

const empty = best(() => timeSets(new MemoryResultCache(DEFAULT_CACHE_MAX_BYTES)))

const full = new MemoryResultCache(DEFAULT_CACHE_MAX_BYTES)
fill(full)
const entries = full.size
const fullUs = best(() => timeSets(full))

const ratio = fullUs / empty
const mib = (full.usedBytes / 1024 / 1024).toFixed(1)
console.log(`RPC result cache, ${SETS} sets per row, best of ${ROUNDS}`)
console.log(`  empty cache          ${empty.toFixed(2)} µs/set`)
console.log(`  full (${mib} MiB, ${entries} entries, every set evicts)  ${fullUs.toFixed(2)} µs/set`)
console.log(`  full / empty         ${ratio.toFixed(2)}×  (target ≤ 3×) ${ratio <= 3 ? 'OK' : 'OVER'}`)
