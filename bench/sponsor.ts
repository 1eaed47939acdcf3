/**
 * npm run bench:sponsor — gas sponsorship throughput, in one process, bounded in time.
 *
 * Rows (BENCH_SECONDS each, default 5, after a 1 s warm-up):
 *   floor     signing alone: the VerifyingPaymaster v0.7 hash and the signer's EIP-191 signature
 *             (viem), one after the other — what no sponsorship can beat in this process
 *   sponsor   SponsorService.sponsor() with BENCH_CONCURRENCY (default 64) callers at once on one
 *             policy that sets every rule: parse the op, decode its calls, price and deposit
 *             (cached), the deciding transaction (row lock, counters, the operator's ceilings
 *             under the account's day-row lock, reservation row; batched per policy), then the
 *             same signature
 * Storage: PostgreSQL when DATABASE_URL is set (a fresh schema, dropped at the end), else PGlite
 * (the figure to quote is PostgreSQL's). The devnet is anvil with dev mode's ERC-4337
 * contracts; the deposit is read from it (cached for 2 s). Prints ops/s, p50, p99, the ratio
 * sponsor/floor and whether the floor holds (≥ 1,000/s and ≥ 0.3× signing).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { encodeFunctionData, parseAbi, toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { FailoverPool } from '../src/chains/upstream-pool.ts'
import { ensureAccountAbstraction } from '../src/devnet/account-abstraction.ts'
import { startAnvil } from '../src/devnet/anvil.ts'
import { paymasterSignerKeyFile } from '../src/gas/paymaster-key.ts'
import { signPaymasterHash, v07PaymasterHash } from '../src/gas/paymaster-signer.ts'
import { PolicyService } from '../src/gas/policy-service.ts'
import { PolicyStore } from '../src/gas/policy-store.ts'
import { planCeilings } from '../src/gas/sponsor-ceilings.ts'
import { SponsorService } from '../src/gas/sponsor-service.ts'
import { StaticPriceSource } from '../src/prices/sources.ts'
import { openStorage, type Storage } from '../src/storage/database.ts'
import { migrate } from '../src/storage/migrate.ts'
import type { Address, Hex } from '../src/types.ts'

const DURATION_S = Number(process.env.BENCH_SECONDS ?? 5)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64)
const WARMUP_S = 1
const SENDERS = 100
const NETWORK = 'ethereum-devnet'
const ACCOUNT = 'acct_bench'

const abi = parseAbi([
  'function execute(address dest, uint256 value, bytes func)',
  'function mint(address to, uint256 amount)',
])
const TOKEN = '0x00000000000000000000000000000000000c0ffe' as Address

interface Row {
  name: string
  opsPerSec: number
  p50: number
  p99: number
  errors: number
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0

/** Runs `fn` from `workers` loops for `seconds`; latencies in ms. */
async function measure(name: string, workers: number, seconds: number, fn: (i: number) => Promise<unknown>) {
  const lat: number[] = []
  let errors = 0
  let firstError: unknown
  let n = 0
  const end = performance.now() + seconds * 1000
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (performance.now() < end) {
        const t = performance.now()
        try {
          await fn(n++)
          lat.push(performance.now() - t)
        } catch (err) {
          errors++
          firstError ??= err
        }
      }
    }),
  )
  if (firstError) console.error(`${name}: first error: ${(firstError as Error).message}`)
  lat.sort((a, b) => a - b)
  return { name, opsPerSec: lat.length / seconds, p50: pct(lat, 0.5), p99: pct(lat, 0.99), errors }
}

async function openBenchStorage(): Promise<{ storage: Storage; label: string; drop: () => Promise<void> }> {
  const url = process.env.DATABASE_URL
  if (!url) {
    const storage = await openStorage({})
    await migrate(storage.db)
    return { storage, label: 'PGlite (set DATABASE_URL for the PostgreSQL figure)', drop: async () => {} }
  }
  const schema = `bench_${randomBytes(6).toString('hex')}`
  const storage = await openStorage({ databaseUrl: url, schema, poolSize: 10 })
  await migrate(storage.db)
  return {
    storage,
    label: 'PostgreSQL',
    drop: async () => {
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      await c.query(`drop schema if exists ${schema} cascade`)
      await c.end()
    },
  }
}

async function main() {
  const anvil = await startAnvil()
  const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-bench-sponsor-'))
  const { config: aa } = await ensureAccountAbstraction(anvil.url, dataDir)
  const signer = privateKeyToAccount(readFileSync(paymasterSignerKeyFile(dataDir), 'utf8').trim() as Hex)
  const { storage, label, drop } = await openBenchStorage()
  const rpc = new FailoverPool([{ url: anvil.url }], 20_000)
  try {
    const senders = Array.from(
      { length: SENDERS },
      () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address,
    )
    // The operator's ceilings are checked on every decision (sponsor-ceilings.ts): set high
    // enough never to bind, so the row shows their cost, not their refusals.
    await storage.db
      .insertInto('accounts')
      .values({
        id: ACCOUNT,
        email: 'bench@halyard.local',
        plan: 'growth',
        limit_rps: null,
        limit_rpd: null,
        limit_cups: null,
      })
      .execute()
    const policy = await new PolicyService(new PolicyStore(storage.db), () => true).create(ACCOUNT, {
      name: 'every rule',
      chain: NETWORK,
      rules: {
        max_gas_usd: '100',
        max_per_user_per_day: 1_000_000,
        allowed_contracts: [TOKEN],
        allowed_methods: ['mint(address,uint256)', 'transfer(address,uint256)'],
        rate_limit: { limit: 100_000_000, window_seconds: 60 },
        max_spend_usd: '1000000000',
        max_spend_per_sender_usd: '10000000',
        max_operations: 1_000_000_000,
        sender_allowlist: senders,
        sender_blocklist: ['0x000000000000000000000000000000000000dead'],
        start_time: '2020-01-01T00:00:00Z',
        end_time: '2100-01-01T00:00:00Z',
        sponsorship_expiry_seconds: 600,
      },
    })
    const svc = new SponsorService({
      storage,
      signer,
      networks: [
        {
          slug: NETWORK,
          chainId: anvil.chainId,
          rpc,
          paymasters: [{ version: 'v07', entryPoint: aa.entryPoints.v07, paymaster: aa.paymaster }],
          prices: new StaticPriceSource({ native: '2000' }),
          ceilings: planCeilings({
            growth: { perOperation: '1', perDay: '1000000', reservedAtOnce: '1000000' },
          }),
        },
      ],
    })
    const op = (i: number) => {
      const sender = senders[i % SENDERS] as Address
      return {
        sender,
        nonce: toHex(i),
        callData: encodeFunctionData({
          abi,
          functionName: 'execute',
          args: [TOKEN, 0n, encodeFunctionData({ abi, functionName: 'mint', args: [sender, 1n] })],
        }),
        callGasLimit: toHex(200_000),
        verificationGasLimit: toHex(150_000),
        preVerificationGas: toHex(50_000),
        maxFeePerGas: toHex(2_000_000_000),
        maxPriorityFeePerGas: toHex(1_000_000_000),
      }
    }
    const sponsor = (i: number) =>
      svc.sponsor({ accountId: ACCOUNT }, { chain: NETWORK, policy_id: policy.id, user_operation: op(i) })
    const sign = async (i: number) => {
      const hash = v07PaymasterHash(
        {
          version: 'v07',
          sender: senders[i % SENDERS] as Address,
          nonce: BigInt(i),
          factory: null,
          factoryData: '0x',
          callData: op(i).callData,
          callGasLimit: 200_000n,
          verificationGasLimit: 150_000n,
          preVerificationGas: 50_000n,
          maxFeePerGas: 2_000_000_000n,
          maxPriorityFeePerGas: 1_000_000_000n,
          paymaster: aa.paymaster,
          paymasterVerificationGasLimit: 60_000n,
          paymasterPostOpGasLimit: 0n,
          paymasterData: '0x',
          signature: '0x',
        },
        anvil.chainId,
        aa.paymaster,
        2_000_000_000,
        1,
      )
      return signPaymasterHash(signer, hash)
    }

    console.log(
      `bench:sponsor — ${label}, ${DURATION_S} s per row, ${CONCURRENCY} concurrent sponsor calls, a policy with all 13 rules`,
    )
    await measure('warm-up', 1, WARMUP_S, sign)
    const floor = await measure('floor · sign alone (viem)', 1, DURATION_S, sign)
    await measure('warm-up', CONCURRENCY, WARMUP_S, sponsor)
    const full = await measure('sponsor · every rule, reserved', CONCURRENCY, DURATION_S, sponsor)
    const rows: Row[] = [floor, full]
    console.log('')
    console.log(
      `${'row'.padEnd(34)} ${'ops/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} errors`,
    )
    for (const r of rows)
      console.log(
        `${r.name.padEnd(34)} ${r.opsPerSec.toFixed(0).padStart(8)} ${r.p50.toFixed(2).padStart(8)} ${r.p99.toFixed(2).padStart(8)} ${r.errors}`,
      )
    const ratio = full.opsPerSec / floor.opsPerSec
    const reserved = await storage.db
      .selectFrom('gas_sponsorships')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow()
    console.log('')
    console.log(`sponsor / floor: ${ratio.toFixed(2)}×  (reservations written: ${reserved.n})`)
    const ok = full.opsPerSec >= 1000 && ratio >= 0.3 && full.errors === 0
    console.log(`issue floor (≥ 1,000/s and ≥ 0.3× signing, no errors): ${ok ? 'met' : 'NOT met'}`)
  } finally {
    await rpc.close()
    await storage.close()
    await drop()
    await anvil.stop()
  }
}

await main()
