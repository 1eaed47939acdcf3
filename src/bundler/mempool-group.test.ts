import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type BundlerFixture,
  deployedAccount,
  deployToken,
  estimatedAndSigned,
  mintData,
  NETWORK,
  startBundlerFixture,
} from '../../test/fixtures/bundler/bundler-fixture.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { createLogger } from '../logger.ts'
import type { Address } from '../types.ts'
import { DEFAULT_MEMPOOL, Mempool } from './mempool.ts'
import { BundlerMetrics } from './metrics.ts'
import { NetworkBundler } from './network.ts'
import type { BundlerService } from './service.ts'
import type { UserOperation } from './types.ts'
import type { ValidatedOp } from './validation.ts'

/**
 * Accepts that arrive while a commit is under way share the next transaction (mempool.ts group
 * commit). Ops are validated first, then handed to the mempool all at once, so the first commits
 * alone and the rest as one group: each must get the answer it would get alone, and a refused
 * op must leave the others' rows in place. The same holds for PGlite's one-statement path.
 */
describe.each(storageBackends())('mempool group commit on $name', (backend) => {
  let fx: BundlerFixture
  let svc: BundlerService
  let token: Address
  let net: NetworkBundler

  beforeAll(async () => {
    fx = await startBundlerFixture(backend)
    svc = fx.service()
    token = await deployToken(fx)
    // Manual bundling: no builder runs, so every accepted op stays pending for the checks.
    const metrics = new BundlerMetrics(undefined, {
      mempoolSizes: async () => new Map(),
      executorBalances: async () => [],
    })
    net = new NetworkBundler(fx.spec({ bundlingMode: 'manual' }), fx.storage, createLogger('silent'), metrics)
  }, 120_000)
  afterAll(async () => {
    await fx?.close()
  })

  // 'group': the transaction path (PostgreSQL's, forced here on either backend); 'one statement':
  // PGlite's plain-op path (insertOpIfFree), which hands anything else to the group. The second
  // runs on PGlite only, as in production (`storage.sharedAccess`): its checks hold because
  // PGlite runs one statement at a time; on PostgreSQL concurrent statements would race.
  const paths: readonly (readonly [string, boolean])[] =
    backend.name === 'postgres'
      ? [['group', true]]
      : [
          ['group', true],
          ['one statement', false],
        ]
  it.each(paths)(
    '%s: each op gets the answer it would get alone; refusals leave no trace',
    async (_, shared) => {
      const mempool = new Mempool({ db: fx.storage.db, network: NETWORK, settings: DEFAULT_MEMPOOL, shared })
      const ep = fx.entryPoint('v07')
      const a = await deployedAccount(fx, svc, 'v07', token)
      const b = await deployedAccount(fx, svc, 'v07', token)
      const signed = async (acct: typeof a, key: bigint) =>
        estimatedAndSigned(fx, svc, acct, await acct.op({ to: token, data: mintData(token), nonceKey: key }))
      // Sender a: five ops under five nonce keys; an unstaked sender may have four waiting.
      const aOps: UserOperation[] = []
      for (const key of [1n, 2n, 3n, 4n, 5n]) aOps.push(await signed(a, key))
      // Sender b: one op, the same op again, and a replacement with fees raised too little.
      const bOp = await signed(b, 1n)
      const cheapBump = await b.sign({
        ...bOp,
        maxFeePerGas: (bOp.maxFeePerGas * 105n) / 100n,
        maxPriorityFeePerGas: (bOp.maxPriorityFeePerGas * 105n) / 100n,
      })
      const all = [...aOps, bOp, bOp, cheapBump]
      const validated: ValidatedOp[] = []
      for (const op of all) validated.push(await net.validator.validate(op, ep))

      const results = await Promise.allSettled(all.map((op, i) => mempool.add(op, ep, validated[i]!)))
      const hashes = validated.map((v) => v.hash)
      for (let i = 0; i < 4; i++) expect(results[i]).toEqual({ status: 'fulfilled', value: hashes[i] })
      expect(results[4]).toMatchObject({
        status: 'rejected',
        reason: { code: -32504, message: expect.stringContaining('already has 4 UserOperations waiting') },
      })
      expect(results[5]).toEqual({ status: 'fulfilled', value: hashes[5] })
      expect(results[6]).toEqual({ status: 'fulfilled', value: hashes[5] })
      expect(results[7]).toMatchObject({
        status: 'rejected',
        reason: { code: -32602, message: expect.stringContaining('to replace it send maxFeePerGas >=') },
      })

      // Committed: the accepted rows are there, once each; the refused ones are not.
      expect(await mempool.liveOfSender(a.address)).toBe(4)
      expect(await mempool.liveOfSender(b.address)).toBe(1)
      for (const h of [...hashes.slice(0, 4), hashes[5]])
        expect(await mempool.get(h!)).toMatchObject({ state: 'pending' })
      expect(await mempool.get(hashes[4]!)).toBeNull()
      expect(await mempool.get(hashes[7]!)).toBeNull()
    },
    120_000,
  )
})
