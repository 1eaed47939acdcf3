import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storageBackends } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { openStorage } from '../storage/database.ts'
import type { Address, Hash, Hex } from '../types.ts'
import {
  type BundlerFixture,
  deployToken,
  mintData,
  startBundlerFixture,
  TestAccount,
} from './bundler-fixture.ts'
import { USER_OP_EVENT } from './receipts.ts'
import { toRpcUserOperation } from './schema.ts'
import type { EntryPointVersion, UserOperation } from './types.ts'
import { userOpHash } from './userop.ts'

/**
 * kill -9 with 100 accepted, unbundled ops: a child process running a BundlerService in manual
 * bundling mode accepts 100 ops of 100 counterfactual SimpleAccounts (signed by permissionless.js,
 * v0.7 and v0.6) and is SIGKILLed; a second process on the same storage bundles them: every one
 * is mined, none twice.
 */

const WORKER = path.join(import.meta.dirname, 'testdata', 'crash-worker.ts')
const OPS = 100

function startWorker(env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', WORKER], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString()
  })
  child.stderr?.on('data', (d: Buffer) => process.stderr.write(d))
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  return { child, out: () => out, exited }
}

describe.each(storageBackends())('bundler killed with SIGKILL on $name', (backend) => {
  let fx: BundlerFixture
  const workers: ReturnType<typeof startWorker>[] = []

  beforeAll(async () => {
    fx = await startBundlerFixture(backend)
  }, 120_000)
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL')
    await Promise.all(workers.map((w) => w.exited))
    await fx?.close()
  })

  /** Hashes of `hashes` with a UserOperationEvent on chain, with how many each has. */
  async function minedCounts(hashes: readonly Hash[]): Promise<Map<Hash, number>> {
    const counts = new Map<Hash, number>(hashes.map((h) => [h, 0]))
    for (const ep of [fx.entryPoint('v07'), fx.entryPoint('v06')]) {
      const logs = await fx.client.request({
        method: 'eth_getLogs',
        params: [
          { address: ep.address, topics: [USER_OP_EVENT as Hex], fromBlock: '0x0', toBlock: 'latest' },
        ],
      })
      for (const l of logs) {
        const h = l.topics[1]?.toLowerCase() as Hash
        if (counts.has(h)) counts.set(h, (counts.get(h) ?? 0) + 1)
      }
    }
    return counts
  }

  it(`all ${OPS} accepted ops are mined exactly once by the next process`, { timeout: 300_000 }, async () => {
    const token = await deployToken(fx)
    const ops: { entryPoint: Address; version: EntryPointVersion; op: Record<string, Hex>; hash: Hash }[] = []
    const fees = await fx.fees()
    for (let i = 0; i < OPS; i++) {
      const version: EntryPointVersion = i % 2 === 0 ? 'v07' : 'v06'
      const acct = await TestAccount.create(fx, version)
      await fx.fund(acct.address)
      const draft = await acct.op({ to: token, data: mintData(acct.address) })
      const op: UserOperation = await acct.sign({
        ...draft,
        ...fees,
        callGasLimit: 100_000n,
        verificationGasLimit: 600_000n,
        preVerificationGas: 100_000n,
      })
      const ep = fx.entryPoint(version).address
      ops.push({
        entryPoint: ep,
        version,
        op: toRpcUserOperation(op),
        hash: userOpHash(op, ep, fx.anvil.chainId),
      })
    }
    const dir = mkdtempSync(path.join(tmpdir(), 'halyard-bundler-crash-'))
    const opsFile = path.join(dir, 'ops.json')
    writeFileSync(opsFile, JSON.stringify(ops))
    const storageEnv: Record<string, string> =
      backend.name === 'postgres'
        ? { WORKER_DATABASE_URL: process.env.DATABASE_URL ?? '', WORKER_SCHEMA: fx.storage.schema ?? '' }
        : { WORKER_PGLITE_DIR: dir }
    const env = {
      ...storageEnv,
      ANVIL_URL: fx.anvil.url,
      WORKER_CHAIN_ID: String(fx.anvil.chainId),
      WORKER_ENTRY_POINTS: JSON.stringify([fx.entryPoint('v07'), fx.entryPoint('v06')]),
    }

    const first = startWorker({ ...env, WORKER_OPS: opsFile })
    workers.push(first)
    await until('the first process accepted every op', () => first.out().includes('accepted-all'), 200_000)
    first.child.kill('SIGKILL')
    await first.exited
    const accepted = [...first.out().matchAll(/accepted (0x[0-9a-f]{64})/g)].map((m) => m[1])
    expect(accepted).toEqual(ops.map((o) => o.hash))
    const hashes = ops.map((o) => o.hash)
    // Manual mode: nothing was bundled before the kill.
    expect([...(await minedCounts(hashes)).values()].every((n) => n === 0)).toBe(true)

    const second = startWorker(env)
    workers.push(second)
    const counts = await until(
      'every op mined',
      async () => {
        const c = await minedCounts(hashes)
        return [...c.values()].every((n) => n >= 1) ? c : null
      },
      200_000,
    )
    await until('the second process drained its mempool', () => second.out().includes('drained'), 60_000)
    second.child.kill('SIGKILL')
    await second.exited
    expect([...counts.entries()].filter(([, n]) => n !== 1)).toEqual([])
    expect([...(await minedCounts(hashes)).values()].every((n) => n === 1)).toBe(true)

    // The mempool agrees (PGlite is opened once the children are gone).
    const storage =
      backend.name === 'postgres' ? fx.storage : await openStorage({ dataDir: storageEnv.WORKER_PGLITE_DIR })
    try {
      const states = await storage.db
        .selectFrom('bundler_user_ops')
        .select(['state', (eb) => eb.fn.countAll<string>().as('n')])
        .groupBy('state')
        .execute()
      expect(states.map((s) => [s.state, Number(s.n)])).toEqual([['included', OPS]])
    } finally {
      if (storage !== fx.storage) await storage.close()
    }
  })
})
