import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type BundlerFixture,
  deployToken,
  startBundlerFixture,
} from '../../test/fixtures/bundler/bundler-fixture.ts'
import {
  minedCounts,
  signedOps,
  startWorker,
  type Worker,
  workerEnv,
  writeOps,
} from '../../test/fixtures/bundler/crash-fixture.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { openStorage } from '../storage/database.ts'

/**
 * kill -9 with 100 accepted, unbundled ops: a child process running a BundlerService in manual
 * bundling mode accepts 100 ops of 100 counterfactual SimpleAccounts (signed by permissionless.js,
 * v0.7 and v0.6) and is SIGKILLed; a second process on the same storage bundles them: every one
 * is mined, none twice.
 */

const OPS = 100

describe.each(storageBackends())('bundler killed with SIGKILL on $name', (backend) => {
  let fx: BundlerFixture
  const workers: Worker[] = []

  beforeAll(async () => {
    fx = await startBundlerFixture(backend)
  }, 120_000)
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL')
    await Promise.all(workers.map((w) => w.exited))
    await fx?.close()
  })

  it(`all ${OPS} accepted ops are mined exactly once by the next process`, { timeout: 300_000 }, async () => {
    const token = await deployToken(fx)
    const ops = await signedOps(fx, token, OPS)
    const dir = mkdtempSync(path.join(tmpdir(), 'halyard-bundler-crash-'))
    const opsFile = writeOps(path.join(dir, 'ops.json'), ops)
    const env = workerEnv(fx, backend.name === 'postgres' ? undefined : dir)

    const first = startWorker({ ...env, WORKER_OPS: opsFile })
    workers.push(first)
    await until('the first process accepted every op', () => first.out().includes('accepted-all'), 200_000)
    first.child.kill('SIGKILL')
    await first.exited
    const accepted = [...first.out().matchAll(/accepted (0x[0-9a-f]{64})/g)].map((m) => m[1])
    expect(accepted).toEqual(ops.map((o) => o.hash))
    const hashes = ops.map((o) => o.hash)
    // Manual mode: nothing was bundled before the kill.
    expect([...(await minedCounts(fx, hashes)).values()].every((n) => n === 0)).toBe(true)

    const second = startWorker(env)
    workers.push(second)
    const counts = await until(
      'every op mined',
      async () => {
        const c = await minedCounts(fx, hashes)
        return [...c.values()].every((n) => n >= 1) ? c : null
      },
      200_000,
    )
    await until('the second process drained its mempool', () => second.out().includes('drained'), 60_000)
    second.child.kill('SIGKILL')
    await second.exited
    expect([...counts.entries()].filter(([, n]) => n !== 1)).toEqual([])
    expect([...(await minedCounts(fx, hashes)).values()].every((n) => n === 1)).toBe(true)

    // The mempool agrees (PGlite is opened once the children are gone).
    const storage = backend.name === 'postgres' ? fx.storage : await openStorage({ dataDir: dir })
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
