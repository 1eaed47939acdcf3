import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FailoverPool } from '../chains/upstream-pool.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { RpcOutcome } from '../jsonrpc.ts'
import type { Address, Hex } from '../types.ts'
import { BundlerChain, type CallOutcome, type RpcCaller } from './chain.ts'

/**
 * The execution gate's batches (chain.ts CallBatcher) on a real anvil: eth_calls queued behind
 * the gate reach the node as one JSON-RPC batch, each caller gets its own outcome (result or
 * revert) exactly as sent alone, and a node that refuses batches gets the calls one by one.
 */

/** Returns its calldata (CALLDATACOPY, RETURN) unless the first byte is 0xff: then it reverts with it. */
const ECHO_CODE = '0x36600060003760003560f81c60ff1461001757366000f35b366000fd' as Hex
const ECHO = '0x00000000000000000000000000000000000ec400' as Address
const override = { [ECHO]: { code: ECHO_CODE } }

describe('BundlerChain batches queued eth_calls', () => {
  let anvil: AnvilProcess
  let pool: FailoverPool

  beforeAll(async () => {
    anvil = await startAnvil()
    pool = new FailoverPool([{ url: anvil.url }], 10_000)
  })
  afterAll(async () => {
    await pool?.close()
    await anvil?.stop()
  })

  /** The pool, counting its requests (a batch is one). */
  function counted(batches: boolean): RpcCaller & { requests: number; batched: number } {
    const c = {
      requests: 0,
      batched: 0,
      call: (method: string, params: readonly unknown[]) => {
        c.requests++
        return pool.call(method, params)
      },
      ...(batches
        ? {
            callBatch: (calls: readonly { method: string; params: readonly unknown[] }[]) => {
              c.requests++
              c.batched += calls.length
              return pool.callBatch(calls)
            },
          }
        : {
            callBatch: async (): Promise<RpcOutcome[]> => {
              c.requests++
              throw new Error('batch requests are not supported')
            },
          }),
    }
    return c
  }

  const payloads = Array.from({ length: 12 }, (_, i) =>
    i % 4 === 3
      ? (`0xff${i.toString(16).padStart(2, '0')}` as Hex)
      : (`0x${(i + 1).toString(16).padStart(4, '0')}` as Hex),
  )

  /** Each caller got what its payload asks for: its calldata back, or a revert with it. */
  const expectOwnOutcomes = (outs: readonly CallOutcome[]) => {
    for (const [i, out] of outs.entries()) {
      const data = payloads[i] as Hex
      if (data.startsWith('0xff')) expect(out).toMatchObject({ ok: false, revert: data })
      else expect(out).toEqual({ ok: true, data })
    }
  }

  it('answers each queued call with its own outcome, in fewer requests than calls', async () => {
    const rpc = counted(true)
    const chain = new BundlerChain(rpc, 1)
    const outs = await Promise.all(payloads.map((data) => chain.call({ to: ECHO, data }, override)))
    expectOwnOutcomes(outs)
    // The first call finds the gate free and goes alone; the rest waited and went together.
    expect(rpc.batched).toBe(payloads.length - 1)
    expect(rpc.requests).toBe(2)
  })

  it('falls back to one call each when a provider answers every call of a batch with an error of its own', async () => {
    // Fake of a hosted provider's batch cap (anvil has none): each call of a batch is refused.
    const rpc = counted(true)
    rpc.callBatch = async (calls) => {
      rpc.requests++
      return calls.map(() => ({ error: { code: -32600, message: 'batch size limit exceeded' } }))
    }
    const chain = new BundlerChain(rpc, 1)
    const outs = await Promise.all(payloads.map((data) => chain.call({ to: ECHO, data }, override)))
    expectOwnOutcomes(outs)
    // The first alone, one refused batch, then the rest one by one.
    expect(rpc.requests).toBe(1 + 1 + (payloads.length - 1))
  })

  it('asks again alone the calls a provider refused inside an otherwise answered batch, and keeps batching', async () => {
    // Fake of a hosted provider answering only the first 4 calls of a batch (anvil has no cap).
    const rpc = counted(true)
    let batches = 0
    rpc.callBatch = async (calls) => {
      rpc.requests++
      batches++
      const answered = await pool.callBatch(calls.slice(0, 4))
      return [
        ...answered,
        ...calls.slice(4).map(() => ({ error: { code: 429, message: 'too many calls in one batch' } })),
      ]
    }
    const chain = new BundlerChain(rpc, 1)
    for (let round = 0; round < 2; round++) {
      const outs = await Promise.all(payloads.map((data) => chain.call({ to: ECHO, data }, override)))
      expectOwnOutcomes(outs)
    }
    // Each round: the first alone, one batch (4 answered), the other 7 alone; the second round
    // batches again (a partly answered batch is no refused batch).
    expect(batches).toBe(2)
    expect(rpc.requests).toBe(2 * (1 + 1 + (payloads.length - 1 - 4)))
  })

  it('falls back to one request per call when the node refuses the batch', async () => {
    const rpc = counted(false)
    const chain = new BundlerChain(rpc, 1)
    const outs = await Promise.all(payloads.map((data) => chain.call({ to: ECHO, data }, override)))
    expect(outs.filter((o) => o.ok).map((o) => (o as { data: Hex }).data)).toEqual(
      payloads.filter((p) => !p.startsWith('0xff')),
    )
    // One refused batch, then every call alone.
    expect(rpc.requests).toBe(payloads.length + 1)
  })
})
