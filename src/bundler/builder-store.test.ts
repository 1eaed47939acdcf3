import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeEachStorage, type TestStorage } from '../../test/helpers/storage.ts'
import type { Address, Hash } from '../types.ts'
import { pendingOps, setOpState } from './builder-store.ts'
import { insertOp } from './mempool-store.ts'
import type { UserOperationV07 } from './types.ts'

/**
 * Which pending ops the builder may take next: a sender's op waits while a live op of its at a
 * lower sequence of the same nonce key is pending or in flight; fee order and the page limit
 * hold, including when a full page holds waiting ops and the next one in line lies past it.
 */

const NETWORK = 'ethereum-devnet'
const EP = '0x0000000071727de22e5e9d8baf0edac6f37da032' as Address
const A = '0x00000000000000000000000000000000000000aa' as Address
const B = '0x00000000000000000000000000000000000000bb' as Address
const nonceOf = (key: bigint, seq: bigint) => (key << 64n) | seq

let n = 0
function op(sender: Address, nonce: bigint, tip: bigint): { hash: Hash; op: UserOperationV07 } {
  n++
  return {
    hash: `0x${n.toString(16).padStart(64, '0')}` as Hash,
    op: {
      version: 'v07',
      sender,
      nonce,
      factory: null,
      factoryData: '0x',
      callData: '0x',
      callGasLimit: 100_000n,
      verificationGasLimit: 100_000n,
      preVerificationGas: 50_000n,
      maxFeePerGas: 10n ** 10n,
      maxPriorityFeePerGas: tip,
      paymaster: null,
      paymasterVerificationGasLimit: 0n,
      paymasterPostOpGasLimit: 0n,
      paymasterData: '0x',
      signature: '0x',
    },
  }
}

describeEachStorage('pendingOps on $name', (backend) => {
  let storage: TestStorage

  beforeAll(async () => {
    storage = await backend.open()
  })
  afterAll(async () => {
    await storage?.close()
  })

  async function add(o: { hash: Hash; op: UserOperationV07 }): Promise<Hash> {
    const written = await insertOp(storage.db, {
      network: NETWORK,
      hash: o.hash,
      entryPoint: EP,
      op: o.op,
      paymaster: null,
      factory: null,
      prefund: 1n,
      validUntil: null,
      senderStaked: true,
    })
    expect(written).toBe(true)
    return o.hash
  }
  const next = async (limit: number) => (await pendingOps(storage.db, NETWORK, EP, limit)).map((o) => o.hash)

  it('takes each sender+key at its lowest live sequence, best tip first, within the limit', async () => {
    // A's key 0 queue pays most; its later ops wait. A's key 7 is a queue of its own. B pays least.
    const a0 = await add(op(A, nonceOf(0n, 0n), 9n))
    const a1 = await add(op(A, nonceOf(0n, 1n), 9n))
    const a2 = await add(op(A, nonceOf(0n, 2n), 9n))
    const a7 = await add(op(A, nonceOf(7n, 3n), 5n))
    const b0 = await add(op(B, nonceOf(0n, 0n), 1n))
    expect(await next(10)).toEqual([a0, a7, b0])
    // A page of 3 is full of A's key 0 queue: the next in line past it still come, in order.
    expect(await next(3)).toEqual([a0, a7, b0])
    expect(await next(1)).toEqual([a0])

    // In flight, a0 still holds a1 back; once included, a1 is next, a2 still waits.
    await setOpState(storage.db, NETWORK, [a0], 'submitted', { bundleTx: a0 })
    expect(await next(10)).toEqual([a7, b0])
    await setOpState(storage.db, NETWORK, [a0], 'included', {})
    expect(await next(10)).toEqual([a1, a7, b0])
    expect(await next(2)).toEqual([a1, a7])
    // A dropped op no longer holds the queue.
    await setOpState(storage.db, NETWORK, [a1], 'dropped', { reason: 'test' })
    expect(await next(10)).toEqual([a2, a7, b0])
  })
})
