import { type ChildProcess, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import type { Address, Hash, Hex } from '../types.ts'
import { type BundlerFixture, mintData, TestAccount } from './bundler-fixture.ts'
import { USER_OP_EVENT } from './receipts.ts'
import { toRpcUserOperation } from './schema.ts'
import type { EntryPointVersion, UserOperation } from './types.ts'
import { userOpHash } from './userop.ts'

/**
 * What the bundler's process tests share (bundler.crash.test.ts, bundler.takeover.test.ts): the
 * worker process (testdata/crash-worker.ts) started on the fixture's anvil and storage, ops of
 * fresh counterfactual SimpleAccounts signed ahead, and how many times the chain mined each.
 */

const WORKER = path.join(import.meta.dirname, 'testdata', 'crash-worker.ts')

export interface Worker {
  child: ChildProcess
  /** Everything it printed so far. */
  out(): string
  exited: Promise<void>
}

/** The worker's environment for the fixture's anvil and storage (`pgliteDir` for PGlite). */
export function workerEnv(fx: BundlerFixture, pgliteDir?: string): Record<string, string> {
  const storage: Record<string, string> = pgliteDir
    ? { WORKER_PGLITE_DIR: pgliteDir }
    : { WORKER_DATABASE_URL: process.env.DATABASE_URL ?? '', WORKER_SCHEMA: fx.storage.schema ?? '' }
  return {
    ...storage,
    ANVIL_URL: fx.anvil.url,
    WORKER_CHAIN_ID: String(fx.anvil.chainId),
    WORKER_ENTRY_POINTS: JSON.stringify([fx.entryPoint('v07'), fx.entryPoint('v06')]),
  }
}

export function startWorker(env: Record<string, string>): Worker {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', WORKER], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString()
    if (process.env.WORKER_LOG) process.stderr.write(d)
  })
  child.stderr?.on('data', (d: Buffer) => process.stderr.write(d))
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  return { child, out: () => out, exited }
}

export interface SignedOp {
  entryPoint: Address
  version: EntryPointVersion
  /** As a client sends it (the worker reads it from a file). */
  rpc: Record<string, Hex>
  op: UserOperation
  hash: Hash
}

/**
 * `count` first ops of fresh counterfactual SimpleAccounts (funded), v0.7 and v0.6 in turn, each
 * deploying its account and minting `token`, signed with generous fixed limits.
 */
export async function signedOps(fx: BundlerFixture, token: Address, count: number): Promise<SignedOp[]> {
  const fees = await fx.fees()
  const ops: SignedOp[] = []
  for (let i = 0; i < count; i++) {
    const version: EntryPointVersion = i % 2 === 0 ? 'v07' : 'v06'
    const acct = await TestAccount.create(fx, version)
    await fx.fund(acct.address)
    const draft = await acct.op({ to: token, data: mintData(acct.address) })
    const op = await acct.sign({
      ...draft,
      ...fees,
      callGasLimit: 100_000n,
      verificationGasLimit: 600_000n,
      preVerificationGas: 100_000n,
    })
    const entryPoint = fx.entryPoint(version).address
    ops.push({
      entryPoint,
      version,
      rpc: toRpcUserOperation(op),
      op,
      hash: userOpHash(op, entryPoint, fx.anvil.chainId),
    })
  }
  return ops
}

/** Writes ops where a worker's WORKER_OPS finds them. */
export function writeOps(file: string, ops: readonly SignedOp[]): string {
  writeFileSync(
    file,
    JSON.stringify(ops.map((o) => ({ entryPoint: o.entryPoint, version: o.version, op: o.rpc }))),
  )
  return file
}

/** How many UserOperationEvents the chain holds for each of `hashes` (an op mined twice shows 2). */
export async function minedCounts(fx: BundlerFixture, hashes: readonly Hash[]): Promise<Map<Hash, number>> {
  const counts = new Map<Hash, number>(hashes.map((h) => [h, 0]))
  for (const ep of [fx.entryPoint('v07'), fx.entryPoint('v06')]) {
    const logs = await fx.client.request({
      method: 'eth_getLogs',
      params: [{ address: ep.address, topics: [USER_OP_EVENT as Hex], fromBlock: '0x0', toBlock: 'latest' }],
    })
    for (const l of logs) {
      const h = l.topics[1]?.toLowerCase() as Hash
      if (counts.has(h)) counts.set(h, (counts.get(h) ?? 0) + 1)
    }
  }
  return counts
}
