import { parseTransaction } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type BundlerFixture,
  deployToken,
  estimatedAndSigned,
  minedReceipt,
  mintData,
  NETWORK,
  startBundlerFixture,
  TestAccount,
} from '../../test/fixtures/bundler/bundler-fixture.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { rpc } from '../devnet/multicall3.ts'
import type { Address, Hash, Hex } from '../types.ts'
import { USER_OP_EVENT } from './receipts.ts'
import type { BundlerService } from './service.ts'
import type { EntryPointVersion } from './types.ts'

/**
 * Bundles after they are sent: a reorg that takes a mined bundle away puts it back in flight
 * and its ops are mined again; a bundle the node will not mine is re-sent with both fees raised.
 */

describe.each(storageBackends())('bundles in flight on $name', (backend) => {
  let fx: BundlerFixture
  let svc: BundlerService
  let token: Address

  beforeAll(async () => {
    fx = await startBundlerFixture(backend)
    svc = fx.service()
    token = await deployToken(fx)
  }, 120_000)
  afterAll(async () => {
    await fx?.close()
  })

  const anvil = (method: string, params: unknown[] = []) => rpc(fx.anvil.url, method, params)

  /** A funded account's signed op, estimated by the service (deploys the account if new). */
  async function signedOp(version: EntryPointVersion, acct?: TestAccount) {
    const a = acct ?? (await TestAccount.create(fx, version))
    await fx.fund(a.address)
    const op = await estimatedAndSigned(fx, svc, a, await a.op({ to: token, data: mintData(a.address) }))
    return { acct: a, op }
  }

  /** UserOperationEvents for `hash` on the canonical chain. */
  async function timesMined(entryPoint: Address, hash: Hash): Promise<number> {
    const logs = await fx.client.request({
      method: 'eth_getLogs',
      params: [
        { address: entryPoint, topics: [USER_OP_EVENT as Hex, hash], fromBlock: '0x0', toBlock: 'latest' },
      ],
    })
    return logs.length
  }

  it('a reorg that removes a mined bundle puts it back in flight; its ops are mined again, once', async () => {
    const ep = fx.entryPoint('v07').address
    // Every round checks (the default is at most one check a second).
    const svc = fx.service({ builder: { reorgCheckMs: 0 } })
    const { op } = await signedOp('v07')
    const hash = await svc.sendUserOperation(NETWORK, op, ep)
    const before = await minedReceipt(svc, hash)
    const block = before.receipt.blockHash as Hash
    expect(await svc.getUserOperationByHash(NETWORK, hash)).toMatchObject({
      status: 'included',
      blockHash: block,
    })

    // Replace the bundle's block with an empty one (the node forgets the transaction).
    await anvil('anvil_reorg', [1, []])
    expect(
      await fx.client
        .getTransactionReceipt({ hash: before.receipt.transactionHash as Hash })
        .catch(() => null),
    ).toBeNull()
    expect(await timesMined(ep, hash)).toBe(0)

    // The next round notices, and re-sends the same transaction; the one after settles it.
    expect(await svc.getUserOperationReceipt(NETWORK, hash)).toBeNull()
    const after = await minedReceipt(svc, hash)
    expect(after.success).toBe(true)
    expect(after.receipt.blockHash).not.toBe(block)
    expect(await timesMined(ep, hash)).toBe(1)
    expect(await svc.getUserOperationByHash(NETWORK, hash)).toMatchObject({
      status: 'included',
      blockHash: after.receipt.blockHash,
      transactionHash: after.receipt.transactionHash,
    })
    const bundle = await fx.storage.db
      .selectFrom('bundler_bundles')
      .select(['state', 'block_hash'])
      .where('tx_hash', '=', after.receipt.transactionHash as Hash)
      .executeTakeFirstOrThrow()
    expect(bundle).toEqual({ state: 'included', block_hash: after.receipt.blockHash })
  }, 120_000)

  it('a bundle whose executor nonce another transaction took is dropped only after the grace; its ops go in a new bundle, once', async () => {
    const ep = fx.entryPoint('v07').address
    const graceSvc = fx.service({ builder: { nonceMovedGraceMs: 500 } })
    const { op } = await signedOp('v07')
    await anvil('evm_setAutomine', [false])
    try {
      const hash = await graceSvc.sendUserOperation(NETWORK, op, ep)
      expect(await graceSvc.bundleNow(NETWORK)).toBe('sent')
      const first = await fx.storage.db
        .selectFrom('bundler_bundles')
        .select(['tx_hash', 'raw_tx', 'executor'])
        .where('state', '=', 'submitted')
        .executeTakeFirstOrThrow()
      const sent = parseTransaction(first.raw_tx as Hex)
      // Another transaction of the executor's takes the bundle's nonce (anvil's accounts are unlocked).
      await anvil('anvil_dropTransaction', [first.tx_hash])
      await anvil('eth_sendTransaction', [
        {
          from: first.executor,
          to: first.executor,
          value: '0x0',
          nonce: `0x${(sent.nonce ?? 0).toString(16)}`,
        },
      ])
      await anvil('anvil_mine', ['0x1'])
      const bundleState = async () =>
        (
          await fx.storage.db
            .selectFrom('bundler_bundles')
            .select('state')
            .where('tx_hash', '=', first.tx_hash)
            .executeTakeFirstOrThrow()
        ).state
      // The first round that sees the nonce moved waits: the receipt may still be on its way.
      expect(await graceSvc.bundleNow(NETWORK)).toBe('waiting')
      expect(await bundleState()).toBe('submitted')
      await new Promise((r) => setTimeout(r, 600))
      // After the grace: dropped, and the op goes straight into a new bundle.
      expect(await graceSvc.bundleNow(NETWORK)).toBe('sent')
      expect(await bundleState()).toBe('dropped')
      await anvil('anvil_mine', ['0x1'])
      const r = await minedReceipt(graceSvc, hash)
      expect(r.success).toBe(true)
      expect(r.receipt.transactionHash).not.toBe(first.tx_hash)
      expect(await timesMined(ep, hash)).toBe(1)
    } finally {
      await anvil('evm_setAutomine', [true])
    }
  }, 120_000)

  it('a bundle the node does not mine is re-sent at the same nonce with both fees raised by at least 10 %', async () => {
    const ep = fx.entryPoint('v06').address
    const stuckSvc = fx.service({ builder: { stuckBlocks: 1, stuckMs: 3_600_000 } })
    const { op } = await signedOp('v06')
    await anvil('evm_setAutomine', [false])
    try {
      const hash = await stuckSvc.sendUserOperation(NETWORK, op, ep)
      expect(await stuckSvc.bundleNow(NETWORK)).toBe('sent')
      const first = await fx.storage.db
        .selectFrom('bundler_bundles')
        .select(['tx_hash', 'raw_tx'])
        .where('state', '=', 'submitted')
        .executeTakeFirstOrThrow()
      const sent = parseTransaction(first.raw_tx as Hex)
      const fee = sent.maxFeePerGas ?? 0n
      const tip = sent.maxPriorityFeePerGas ?? 0n

      // A block whose base fee is above what the bundle offers: the bundle stays in the pool.
      await anvil('anvil_setNextBlockBaseFeePerGas', [`0x${(fee + 1n).toString(16)}`])
      await anvil('anvil_mine', ['0x1'])
      expect(
        await fx.client.getTransactionReceipt({ hash: first.tx_hash as Hash }).catch(() => null),
      ).toBeNull()

      // One block later it counts as stuck: the builder replaces it.
      expect(await stuckSvc.bundleNow(NETWORK)).toBe('waiting')
      const rows = await fx.storage.db
        .selectFrom('bundler_bundles')
        .select(['tx_hash', 'raw_tx', 'state'])
        .where('executor_nonce', '=', sent.nonce?.toString() ?? '')
        .orderBy('created_at')
        .execute()
      expect(rows.map((r) => r.state)).toEqual(['replaced', 'submitted'])
      const bumped = parseTransaction(rows[1]?.raw_tx as Hex)
      expect(bumped.nonce).toBe(sent.nonce)
      expect(bumped.maxFeePerGas).toBeGreaterThanOrEqual((fee * 110n) / 100n)
      expect(bumped.maxPriorityFeePerGas).toBeGreaterThanOrEqual((tip * 110n) / 100n)

      await anvil('anvil_mine', ['0x1'])
      const r = await minedReceipt(stuckSvc, hash)
      expect(r.success).toBe(true)
      expect(r.receipt.transactionHash).toBe(rows[1]?.tx_hash)
      expect(await timesMined(ep, hash)).toBe(1)
      const states = await fx.storage.db
        .selectFrom('bundler_bundles')
        .select(['tx_hash', 'state'])
        .where('executor_nonce', '=', sent.nonce?.toString() ?? '')
        .orderBy('created_at')
        .execute()
      expect(states.map((s) => s.state)).toEqual(['dropped', 'included'])
    } finally {
      await anvil('evm_setAutomine', [true])
    }
  }, 120_000)
})
