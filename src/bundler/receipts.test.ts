import { keccak256, toHex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FailoverPool } from '../chains/upstream-pool.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { RpcOutcome } from '../jsonrpc.ts'
import type { Address, Hash, Hex } from '../types.ts'
import { BundlerChain, type RpcCaller } from './chain.ts'
import { findUserOpLog, MAX_LOG_REQUESTS, USER_OP_EVENT } from './receipts.ts'
import type { EntryPointRef } from './types.ts'

/**
 * The receipt lookup's eth_getLogs on a real anvil, through a provider that caps the block range
 * as hosted providers do. Anvil has no cap, so the cap is a fake in front of it (below); the logs,
 * blocks and answers are anvil's.
 */

/** Emits LOG2 with topics calldata[0:32] and calldata[32:64]: stands in for the EntryPoint's event. */
const EMITTER_CODE = '0x60203560003560006000a200' as Hex
const EMITTER = '0x00000000000000000000000000000000000e7e00' as Address
const EP: EntryPointRef = { address: EMITTER, version: 'v07' }
const CAP = 50n

describe('findUserOpLog against a provider that caps eth_getLogs ranges', () => {
  let anvil: AnvilProcess
  let pool: FailoverPool
  const hash = keccak256(toHex('an op mined 150 blocks ago')) as Hash
  let txHash: Hash

  const rpc = (method: string, params: unknown[]) => pool.call(method, params).then((o) => o.result)

  beforeAll(async () => {
    anvil = await startAnvil()
    pool = new FailoverPool([{ url: anvil.url }], 10_000)
    await rpc('anvil_setCode', [EMITTER, EMITTER_CODE])
    // Anvil mines a long run of blocks in one call slowly (5,000: ~50 s): a few hundred suffice.
    await rpc('anvil_mine', [toHex(400)])
    const [from] = (await rpc('eth_accounts', [])) as Address[]
    txHash = (await rpc('eth_sendTransaction', [
      { from, to: EMITTER, data: `${USER_OP_EVENT}${hash.slice(2)}` },
    ])) as Hash
    await rpc('anvil_mine', [toHex(150)])
  })
  afterAll(async () => {
    await pool?.close()
    await anvil?.stop()
  })

  /** The pool behind a range cap, counting eth_getLogs requests and refusals. */
  function capped(cap: bigint | null): RpcCaller & { requests: number; refused: number } {
    const c = {
      requests: 0,
      refused: 0,
      call: async (method: string, params: readonly unknown[]): Promise<RpcOutcome> => {
        if (method === 'eth_getLogs') {
          c.requests++
          const f = params[0] as { fromBlock: Hex; toBlock: Hex }
          if (cap !== null && BigInt(f.toBlock) - BigInt(f.fromBlock) + 1n > cap) {
            c.refused++
            return { error: { code: -32600, message: `block range is too wide (max ${cap})` } }
          }
        }
        return pool.call(method, params)
      },
    }
    return c
  }

  it('finds a log in one request where the node takes the whole range', async () => {
    const node = capped(null)
    const found = await findUserOpLog(new BundlerChain(node), [EP], hash, 100_000n)
    expect(found?.log.transactionHash).toBe(txHash)
    expect(node.requests).toBe(1)
  })

  it('narrows the window when refused, searches newest first, and starts the next lookup at the width that worked', async () => {
    const node = capped(CAP)
    const chain = new BundlerChain(node)
    const found = await findUserOpLog(chain, [EP], hash, 100_000n)
    expect(found?.log.transactionHash).toBe(txHash)
    expect(found?.entryPoint).toEqual(EP)
    expect(node.refused).toBeGreaterThan(0)
    expect(node.requests).toBeLessThanOrEqual(MAX_LOG_REQUESTS)
    expect(chain.logWindow?.blocks).toBeLessThanOrEqual(CAP)

    const refusedBefore = node.refused
    const second = await findUserOpLog(chain, [EP], hash, 100_000n)
    expect(second?.log.transactionHash).toBe(txHash)
    expect(node.refused).toBe(refusedBefore)

    // Once the learned width lapses, the whole range is tried again (and refused again here).
    chain.logWindow = { blocks: chain.logWindow?.blocks ?? 1n, until: Date.now() - 1 }
    const third = await findUserOpLog(chain, [EP], hash, 100_000n)
    expect(third?.log.transactionHash).toBe(txHash)
    expect(node.refused).toBeGreaterThan(refusedBefore)
  })

  it('answers null for a hash it never saw, within its request budget', async () => {
    const node = capped(CAP)
    const unknown = keccak256(toHex('never sent')) as Hash
    expect(await findUserOpLog(new BundlerChain(node), [EP], unknown, 100_000n)).toBeNull()
    expect(node.requests).toBeLessThanOrEqual(MAX_LOG_REQUESTS)
  })

  it('gives the node error when even a narrow window is refused', async () => {
    const node = capped(5n)
    await expect(findUserOpLog(new BundlerChain(node), [EP], hash, 100_000n)).rejects.toMatchObject({
      code: -32603,
      message: expect.stringMatching(/eth_getLogs failed: block range is too wide/),
    })
    expect(node.requests).toBeLessThanOrEqual(MAX_LOG_REQUESTS)
  })
})
