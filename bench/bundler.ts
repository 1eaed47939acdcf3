/**
 * npm run bench:bundler — Halyard's bundler engine against Alto (@pimlico/alto) on one anvil.
 *
 * Setup: anvil (mining on every transaction) with dev mode's ERC-4337 contracts; for each run,
 * OPS fresh SimpleAccount v0.7 owners (permissionless.js), their accounts deployed beforehand by
 * the factory directly (so every bundler sees the same stream of plain ops from distinct senders,
 * and no factory reputation limit shapes the result). Per run, over HTTP JSON-RPC:
 *   estimate   eth_estimateUserOperationGas per op (stub signature), then signed with exactly
 *              those limits
 *   accept     all ops sent with CONCURRENCY requests in flight: accepted ops/s
 *   inclusion  per op, send → first eth_getUserOperationReceipt with success (polled every
 *              POLL_MS): p50 / p99
 *   accuracy   used gas (actualGasUsed) / estimated gas (sum of the limits and
 *              preVerificationGas), median and range, and how many landed with the estimate
 * Rows: Halyard unsafe vs Alto unsafe (`--safe-mode false`; its safe mode does not run on anvil),
 * then Halyard with the full ERC-7562 rules (safe mode) beside them. Halyard's engine runs in a
 * child process (this file with `--halyard`) behind a minimal JSON-RPC shim (the /v1/bundler route is not wired yet), on PostgreSQL
 * when DATABASE_URL is set, else PGlite.
 * Alto runs as its own process. It is not a project dependency (36 MB and its own lockfile churn for
 * every `npm ci`): the first run installs the pinned version into .bench-deps/ (git-ignored).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { toSimpleSmartAccount } from 'permissionless/accounts'
import { createPublicClient, encodeFunctionData, http, parseAbi, toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { ANVIL_EXECUTOR_KEYS } from '../src/bundler/executor.ts'
import { parseUserOperation } from '../src/bundler/schema.ts'
import { type BundlerNetworkSpec, BundlerService } from '../src/bundler/service.ts'
import { BundlerError } from '../src/bundler/types.ts'
import { FailoverPool } from '../src/chains/upstream-pool.ts'
import { ensureAccountAbstraction } from '../src/devnet/account-abstraction.ts'
import { startAnvil } from '../src/devnet/anvil.ts'
import { DEV_ACCOUNT } from '../src/devnet/demo.ts'
import { rpc } from '../src/devnet/multicall3.ts'
import { createLogger } from '../src/logger.ts'
import { openStorage } from '../src/storage/database.ts'
import { migrate } from '../src/storage/migrate.ts'
import type { Address, Hex } from '../src/types.ts'

const OPS = Number(process.env.BENCH_OPS ?? 100)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16)
const POLL_MS = 25
/** anvil's well-known account 7: Alto's utility key (account 8 is its executor, 9 Halyard's). */
const ANVIL_KEY_7: Hex = '0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356'
const ALTO_VERSION = '0.0.20'
const ALTO_PREFIX = path.resolve(import.meta.dirname, '../.bench-deps/alto')
const ALTO_CLI = path.join(ALTO_PREFIX, 'node_modules/@pimlico/alto/esm/cli/alto.js')

/** Installs Alto beside the project (not into it) when missing; a message when that fails. */
function ensureAlto(): string | undefined {
  if (existsSync(ALTO_CLI)) return undefined
  console.log(`installing @pimlico/alto@${ALTO_VERSION} into .bench-deps/alto (first run only)…`)
  const r = spawnSync(
    'npm',
    [
      'install',
      '--no-save',
      '--no-audit',
      '--no-fund',
      '--prefix',
      ALTO_PREFIX,
      `@pimlico/alto@${ALTO_VERSION}`,
    ],
    { stdio: 'inherit' },
  )
  return r.status === 0 && existsSync(ALTO_CLI)
    ? undefined
    : `could not install @pimlico/alto@${ALTO_VERSION}`
}

const factoryAbi = parseAbi(['function createAccount(address owner, uint256 salt) returns (address)'])
const tokenless = '0x000000000000000000000000000000000000beef' as Address

interface Row {
  name: string
  acceptedPerSec: number
  accepted: number
  p50: number
  p99: number
  ratioMedian: number
  ratioMin: number
  ratioMax: number
  landed: number
  note?: string
}

async function call(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await res.json()) as { result?: unknown; error?: { code: number; message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.code} ${body.error.message}`)
  return body.result
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? Number.NaN : (s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number)
}

/** Halyard's engine behind the ERC-7769 methods the bench uses, over HTTP. */
async function halyardShim(svc: BundlerService, network: string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (d) => {
      body += d
    })
    req.on('end', async () => {
      let id: unknown = null
      try {
        const msg = JSON.parse(body) as { id: unknown; method: string; params: unknown[] }
        id = msg.id
        const p = msg.params ?? []
        const ep = () => p[1] as Address
        const version = () => svc.entryPointVersion(network, ep())
        let result: unknown
        if (msg.method === 'eth_chainId') result = svc.chainId(network)
        else if (msg.method === 'eth_supportedEntryPoints') result = svc.supportedEntryPoints(network)
        else if (msg.method === 'eth_sendUserOperation')
          result = await svc.sendUserOperation(network, parseUserOperation(p[0], version()), ep())
        else if (msg.method === 'eth_estimateUserOperationGas')
          result = await svc.estimateUserOperationGas(
            network,
            parseUserOperation(p[0], version(), { estimating: true }),
            ep(),
          )
        else if (msg.method === 'eth_getUserOperationReceipt')
          result = await svc.getUserOperationReceipt(network, p[0] as Hex)
        else {
          const error = { code: -32601, message: `${msg.method} is not served by the bench shim` }
          res.end(JSON.stringify({ jsonrpc: '2.0', id, error }))
          return
        }
        res.end(
          JSON.stringify({ jsonrpc: '2.0', id, result }, (_, v) => (typeof v === 'bigint' ? toHex(v) : v)),
        )
      } catch (err) {
        const code = err instanceof BundlerError ? err.code : -32603
        res.end(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message: (err as Error).message } }))
      }
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

async function startAlto(
  anvilUrl: string,
  eps: Address[],
): Promise<{ url: string; child: ChildProcess } | string> {
  const missing = ensureAlto()
  if (missing) return missing
  const port = 14_000 + Math.floor(Math.random() * 1000)
  const child = spawn(
    process.execPath,
    [
      ALTO_CLI,
      '--entrypoints',
      eps.join(','),
      '--rpc-url',
      anvilUrl,
      '--executor-private-keys',
      ANVIL_EXECUTOR_KEYS[0] as string,
      '--utility-private-key',
      ANVIL_KEY_7,
      '--port',
      String(port),
      '--safe-mode',
      'false',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  child.stdout?.on('data', (d) => {
    out += d
  })
  child.stderr?.on('data', (d) => {
    out += d
  })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 600; i++) {
    try {
      await call(url, 'eth_chainId', [])
      return { url, child }
    } catch {
      if (child.exitCode !== null) return `alto exited: ${out.slice(-500)}`
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  child.kill('SIGKILL')
  return `alto did not answer within 60 s: ${out.slice(-500)}`
}

/** OPS owners whose SimpleAccounts (v0.7) the factory deploys directly, funded. */
async function deployedAccounts(anvilUrl: string, factory: Address, entryPoint: Address) {
  const client = createPublicClient({ transport: http(anvilUrl) })
  const accounts = []
  for (let i = 0; i < OPS; i++) {
    const owner = privateKeyToAccount(generatePrivateKey())
    const account = await toSimpleSmartAccount({
      client,
      owner,
      factoryAddress: factory,
      entryPoint: { address: entryPoint, version: '0.7' },
    })
    const data = encodeFunctionData({
      abi: factoryAbi,
      functionName: 'createAccount',
      args: [owner.address, 0n],
    })
    await rpc(anvilUrl, 'eth_sendTransaction', [{ from: DEV_ACCOUNT, to: factory, data, gas: '0x100000' }])
    await rpc(anvilUrl, 'anvil_setBalance', [await account.getAddress(), toHex(10n ** 18n)])
    accounts.push(account)
  }
  return { client, accounts }
}

async function run(
  name: string,
  url: string,
  anvilUrl: string,
  aa: { factory: Address; ep: Address },
): Promise<Row> {
  const { client, accounts } = await deployedAccounts(anvilUrl, aa.factory, aa.ep)
  const block = await client.getBlock()
  const tip = 2_000_000_000n
  const fees = { maxFeePerGas: (block.baseFeePerGas ?? 0n) * 3n + tip, maxPriorityFeePerGas: tip }
  // Estimate each op (stub signature), sign it with exactly the estimate.
  const signed: { op: Record<string, unknown>; estimated: bigint }[] = []
  for (const account of accounts) {
    const base = {
      sender: await account.getAddress(),
      nonce: toHex(await account.getNonce({ key: 0n })),
      callData: await account.encodeCalls([{ to: tokenless, value: 1n, data: '0x' }]),
      maxFeePerGas: toHex(fees.maxFeePerGas),
      maxPriorityFeePerGas: toHex(fees.maxPriorityFeePerGas),
      signature: await account.getStubSignature(),
    }
    const est = (await call(url, 'eth_estimateUserOperationGas', [base, aa.ep])) as Record<string, Hex>
    const gas = {
      callGasLimit: BigInt(est.callGasLimit as Hex),
      verificationGasLimit: BigInt(est.verificationGasLimit as Hex),
      preVerificationGas: BigInt(est.preVerificationGas as Hex),
    }
    const signature = await account.signUserOperation({
      sender: base.sender,
      nonce: BigInt(base.nonce),
      callData: base.callData,
      ...gas,
      ...fees,
      signature: '0x',
    })
    signed.push({
      op: {
        ...base,
        callGasLimit: toHex(gas.callGasLimit),
        verificationGasLimit: toHex(gas.verificationGasLimit),
        preVerificationGas: toHex(gas.preVerificationGas),
        signature,
      },
      estimated: gas.callGasLimit + gas.verificationGasLimit + gas.preVerificationGas,
    })
  }

  // Accept: all ops, CONCURRENCY in flight; then each op's receipt, polled.
  const sentAt: number[] = []
  const hashes: (Hex | null)[] = []
  const errors: string[] = []
  const start = performance.now()
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < signed.length; i = next++) {
        sentAt[i] = performance.now()
        try {
          hashes[i] = (await call(url, 'eth_sendUserOperation', [signed[i]?.op, aa.ep])) as Hex
        } catch (err) {
          hashes[i] = null
          errors.push((err as Error).message)
        }
      }
    }),
  )
  const acceptSeconds = (performance.now() - start) / 1000
  const latencies: number[] = []
  const ratios: number[] = []
  let landed = 0
  await Promise.all(
    hashes.map(async (h, i) => {
      if (!h) return
      for (let t = 0; t < 60_000 / POLL_MS; t++) {
        const r = (await call(url, 'eth_getUserOperationReceipt', [h]).catch(() => null)) as {
          success: boolean
          actualGasUsed: Hex
        } | null
        if (r) {
          latencies.push(performance.now() - (sentAt[i] as number))
          if (r.success) landed++
          ratios.push(Number(BigInt(r.actualGasUsed)) / Number(signed[i]?.estimated))
          return
        }
        await new Promise((res) => setTimeout(res, POLL_MS))
      }
    }),
  )
  const accepted = hashes.filter(Boolean).length
  return {
    name,
    acceptedPerSec: accepted / acceptSeconds,
    accepted,
    p50: pct(latencies, 50),
    p99: pct(latencies, 99),
    ratioMedian: pct(ratios, 50),
    ratioMin: Math.min(...ratios),
    ratioMax: Math.max(...ratios),
    landed,
    ...(errors.length > 0 ? { note: `${errors.length} refused, e.g. ${errors[0]?.slice(0, 160)}` } : {}),
  }
}

interface HalyardChildSpec {
  anvilUrl: string
  spec: Omit<BundlerNetworkSpec, 'slug' | 'rpc'>
}

/**
 * Child mode (`--halyard <json>`): the engine and its shim in a process of their own, as Alto
 * is, so neither shares an event loop with the load generator. Prints `halyard-listening <url>`.
 */
async function serveHalyard(child: HalyardChildSpec): Promise<void> {
  // PostgreSQL when DATABASE_URL is set (a schema of its own, dropped after), else PGlite in memory.
  const url = process.env.DATABASE_URL
  const schema = `bench_bundler_${randomBytes(4).toString('hex')}`
  const storage = await openStorage(url ? { databaseUrl: url, schema, poolSize: 20 } : {})
  await migrate(storage.db)
  const pool = new FailoverPool([{ url: child.anvilUrl }], 20_000)
  const svc = new BundlerService({
    storage,
    logger: createLogger('silent'),
    networks: [{ ...child.spec, slug: 'ethereum-devnet', rpc: pool, idleMs: 20, pollMs: 10 }],
  })
  svc.start()
  const shim = await halyardShim(svc, 'ethereum-devnet')
  process.once('SIGTERM', async () => {
    shim.server.close()
    await svc.stop()
    await pool.close()
    if (url) await sql`drop schema ${sql.id(schema)} cascade`.execute(storage.db)
    await storage.close()
    process.exit(0)
  })
  process.stdout.write(`halyard-listening ${shim.url}\n`)
}

async function halyardRun(
  name: string,
  child: HalyardChildSpec,
  aa: { factory: Address; ep: Address },
): Promise<Row> {
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', import.meta.filename, '--halyard', JSON.stringify(child)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  const exited = new Promise<void>((r) => proc.once('exit', () => r()))
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = ''
      proc.stdout?.on('data', (d) => {
        out += d
        const m = /halyard-listening (\S+)/.exec(out)
        if (m) resolve(m[1] as string)
      })
      proc.once('exit', () => reject(new Error(`the Halyard child exited: ${out}`)))
    })
    return await run(name, url, child.anvilUrl, aa)
  } finally {
    proc.kill('SIGTERM')
    await exited
  }
}

async function main() {
  const anvil = await startAnvil({ extraArgs: ['--gas-limit', '60000000'] })
  let alto: ChildProcess | undefined
  try {
    const { config } = await ensureAccountAbstraction(
      anvil.url,
      mkdtempSync(path.join(tmpdir(), 'halyard-bench-aa-')),
    )
    const aa = { factory: config.simpleAccountFactory.v07, ep: config.entryPoints.v07 }
    const entryPoints = [
      { address: config.entryPoints.v07, version: 'v07' as const },
      { address: config.entryPoints.v06, version: 'v06' as const },
    ]
    // anvil runs EVM calls one at a time: Halyard's dev mode setting for it.
    const base = {
      chainId: anvil.chainId,
      entryPoints,
      executorKeys: [ANVIL_EXECUTOR_KEYS[1] as Hex],
      maxConcurrentExecutions: 1,
    }
    console.log(
      `bench:bundler — ${OPS} ops from ${OPS} deployed SimpleAccounts v0.7, ${CONCURRENCY} in flight, anvil automine, Halyard on ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'} in a child process`,
    )
    const rows: Row[] = []
    const halyard = (mode: 'safe' | 'unsafe') => ({
      anvilUrl: anvil.url,
      spec: { ...base, validation: { mode } },
    })
    rows.push(await halyardRun('Halyard unsafe', halyard('unsafe'), aa))
    const started = await startAlto(anvil.url, [config.entryPoints.v07, config.entryPoints.v06])
    if (typeof started === 'string') {
      rows.push({
        name: 'Alto unsafe',
        acceptedPerSec: Number.NaN,
        accepted: 0,
        p50: Number.NaN,
        p99: Number.NaN,
        ratioMedian: Number.NaN,
        ratioMin: Number.NaN,
        ratioMax: Number.NaN,
        landed: 0,
        note: started,
      })
    } else {
      alto = started.child
      rows.push(await run('Alto unsafe', started.url, anvil.url, aa))
    }
    rows.push(await halyardRun('Halyard safe (ERC-7562)', halyard('safe'), aa))

    const f = (v: number, d = 0) => (Number.isFinite(v) ? v.toFixed(d) : '—')
    console.log('')
    console.log(
      '| row | accepted ops/s | send→receipt p50 ms | p99 ms | used/estimated gas (median, min–max) | landed |',
    )
    console.log('|---|---:|---:|---:|---|---:|')
    for (const r of rows)
      console.log(
        `| ${r.name} | ${f(r.acceptedPerSec, 1)} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.ratioMedian, 3)} (${f(r.ratioMin, 3)}–${f(r.ratioMax, 3)}) | ${r.landed}/${OPS} |`,
      )
    for (const r of rows) if (r.note) console.log(`${r.name}: ${r.note}`)
    const [h, a] = rows
    if (h && a && Number.isFinite(a.acceptedPerSec))
      console.log(
        `floor (Halyard unsafe vs Alto unsafe): accepted ops/s ${h.acceptedPerSec >= a.acceptedPerSec ? 'met' : 'NOT met'}, p50 inclusion ${h.p50 <= a.p50 ? 'met' : 'NOT met'}`,
      )
  } finally {
    alto?.kill('SIGKILL')
    await anvil.stop()
  }
}

const child = process.argv.indexOf('--halyard')
if (child >= 0) await serveHalyard(JSON.parse(process.argv[child + 1] as string) as HalyardChildSpec)
else {
  await main()
  process.exit(0)
}
