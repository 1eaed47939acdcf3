import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  type BundlerFixture,
  deployToken,
  NETWORK,
  startBundlerFixture,
} from '../../test/fixtures/bundler/bundler-fixture.ts'
import {
  minedCounts,
  type SignedOp,
  signedOps,
  startWorker,
  type Worker,
  workerEnv,
  writeOps,
} from '../../test/fixtures/bundler/crash-fixture.ts'
import { describeEachStorage, POSTGRES_ONLY } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import type { Address } from '../types.ts'
import type { BundlerService } from './service.ts'

/**
 * Two Halyard bundlers on one PostgreSQL, the builder SIGKILLed: process A (a child) takes the
 * network's builder lock and accepts ops of its own; B (this process) waits for the lock and
 * accepts ops too. A bundles both while it lives; ops sent to B after A is killed are bundled by
 * B once the dead session's advisory lock is gone. Every op is mined exactly once.
 */

const PER_BATCH = 6

describeEachStorage(
  'builder takeover after SIGKILL on $name',
  (backend) => {
    let fx: BundlerFixture
    let b: BundlerService
    let token: Address
    const workers: Worker[] = []

    beforeAll(async () => {
      fx = await startBundlerFixture(backend)
      token = await deployToken(fx)
    }, 120_000)
    afterAll(async () => {
      for (const w of workers) w.child.kill('SIGKILL')
      await Promise.all(workers.map((w) => w.exited))
      await b?.stop()
      await fx?.close()
    })

    const sendToB = async (ops: readonly SignedOp[]) => {
      for (const o of ops) expect(await b.sendUserOperation(NETWORK, o.op, o.entryPoint)).toBe(o.hash)
    }
    const allMined = (ops: readonly SignedOp[]) =>
      until(
        'ops mined',
        async () =>
          [
            ...(
              await minedCounts(
                fx,
                ops.map((o) => o.hash),
              )
            ).values(),
          ].every((n) => n >= 1),
        120_000,
      )

    it('ops sent to either are bundled once; killing the builder hands the lock to the other', {
      timeout: 300_000,
    }, async () => {
      const [toA, toB, lastToB] = [
        await signedOps(fx, token, PER_BATCH),
        await signedOps(fx, token, PER_BATCH),
        await signedOps(fx, token, PER_BATCH),
      ] as [SignedOp[], SignedOp[], SignedOp[]]
      const dir = mkdtempSync(path.join(tmpdir(), 'halyard-bundler-takeover-'))
      const a = startWorker({
        ...workerEnv(fx),
        WORKER_OPS: writeOps(path.join(dir, 'ops.json'), toA),
        WORKER_BUNDLING: 'auto',
      })
      workers.push(a)
      b = fx.service()
      // A holds the builder lock before B starts waiting for it.
      await until('A holds the builder lock', () => fx.builderLockHeld(), 60_000)
      b.start()
      await until('A accepted its ops', () => a.out().includes('accepted-all'), 120_000)
      await sendToB(toB)
      await allMined([...toA, ...toB])
      // The lock is still held, and every bundle so far came from A's loop (B sent none).
      expect(await fx.builderLockHeld()).toBe(true)

      const sentByB = async () =>
        (await b.metrics.bundles.get()).values
          .filter((v) => v.labels.outcome === 'sent')
          .reduce((n, v) => n + v.value, 0)
      expect(await sentByB()).toBe(0)
      // Some just before the kill (either may bundle them), the rest after it (only B can).
      await sendToB(lastToB.slice(0, PER_BATCH / 2))
      a.child.kill('SIGKILL')
      await a.exited
      await sendToB(lastToB.slice(PER_BATCH / 2))
      await allMined(lastToB)
      expect(await sentByB()).toBeGreaterThan(0)
      const counts = await minedCounts(
        fx,
        [...toA, ...toB, ...lastToB].map((o) => o.hash),
      )
      expect([...counts.entries()].filter(([, n]) => n !== 1)).toEqual([])
    })
  },
  POSTGRES_ONLY,
)
