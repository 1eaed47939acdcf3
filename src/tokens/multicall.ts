import { decodeFunctionResult, encodeFunctionData, parseAbi } from 'viem'
import { type ChainNode, call, getCode, hasCode, nodeAnswered } from '../chains/reads.ts'
import { MULTICALL3_ADDRESS } from '../devnet/multicall3.ts'
import type { Address, Hex } from '../types.ts'

const MULTICALL3_ABI = parseAbi([
  'struct Call3 { address target; bool allowFailure; bytes callData; }',
  'struct Result { bool success; bytes returnData; }',
  'function aggregate3(Call3[] calls) payable returns (Result[] returnData)',
])

export interface ContractCall {
  target: Address
  data: Hex
}

export interface CallResult {
  success: boolean
  data: Hex
}

/** Calls per aggregate3 request: large enough to batch, small enough for node gas caps. */
const BATCH = 400

/** How long a missing Multicall3 is trusted to stay missing before its code is checked again. */
const REPROBE_MS = 60_000

/**
 * Reads many view functions at the head: through Multicall3's aggregate3 (one eth_call per
 * batch, each call allowed to fail) where Multicall3 exists, else one eth_call each. Its code can
 * vanish at any time (a devnet's anvil_setCode, a reset), and an aggregate3 also fails when its
 * calls burn its gas (a handful of hostile tokens in one batch do): a batch that fails or does not
 * decode is answered with individual calls, and the next read checks Multicall3's code again. A
 * present Multicall3 is trusted until a batch fails; a missing one is checked again after REPROBE_MS.
 */
export class MultiReader {
  private probe: { available: Promise<boolean>; until: number } | undefined

  constructor(private readonly node: ChainNode) {}

  async read(calls: readonly ContractCall[]): Promise<CallResult[]> {
    if (calls.length === 0) return []
    if (!(await this.multicallAvailable())) return Promise.all(calls.map((c) => this.single(c)))
    const batches: Promise<CallResult[]>[] = []
    for (let i = 0; i < calls.length; i += BATCH) batches.push(this.batchOrSingles(calls.slice(i, i + BATCH)))
    return (await Promise.all(batches)).flat()
  }

  private async batchOrSingles(calls: readonly ContractCall[]): Promise<CallResult[]> {
    const results = await this.batch(calls)
    if (results) return results
    // Multicall3 gone, or these calls burnt the batch's gas: no verdict on the network's other
    // reads, so only this batch goes call by call, and the next read checks the code again.
    this.probe = undefined
    return Promise.all(calls.map((c) => this.single(c)))
  }

  private multicallAvailable(): Promise<boolean> {
    if (this.probe && Date.now() < this.probe.until) return this.probe.available
    const probe = {
      until: Date.now() + REPROBE_MS,
      available: getCode(this.node, MULTICALL3_ADDRESS).then(
        (code) => {
          const present = hasCode(code)
          // A present one needs no timer: a failing batch makes the next read check again.
          if (present) probe.until = Number.POSITIVE_INFINITY
          return present
        },
        (err) => {
          // A node that answered something else than code: missing until the re-probe period.
          if (nodeAnswered(err)) return false
          // The node did not answer: ask again on the next read, not after the re-probe period.
          if (this.probe === probe) this.probe = undefined
          return false
        },
      ),
    }
    this.probe = probe
    return probe.available
  }

  /**
   * One aggregate3 call; undefined when Multicall3 failed or answered something that is not
   * aggregate3's result (no code there any more, other code). A node that cannot be reached
   * rejects: individual calls would fail the same way, only more often.
   */
  private async batch(calls: readonly ContractCall[]): Promise<CallResult[] | undefined> {
    const data = encodeFunctionData({
      abi: MULTICALL3_ABI,
      functionName: 'aggregate3',
      args: [calls.map((c) => ({ target: c.target, allowFailure: true, callData: c.data }))],
    })
    let out: Hex
    try {
      out = await call(this.node, { to: MULTICALL3_ADDRESS, data })
    } catch (err) {
      if (nodeAnswered(err)) return undefined
      throw err
    }
    let results: readonly { success: boolean; returnData: Hex }[]
    try {
      results = decodeFunctionResult({ abi: MULTICALL3_ABI, functionName: 'aggregate3', data: out })
    } catch {
      return undefined
    }
    if (results.length !== calls.length) return undefined
    return results.map((r) => ({ success: r.success, data: r.returnData }))
  }

  private async single(c: ContractCall): Promise<CallResult> {
    try {
      return { success: true, data: await call(this.node, { to: c.target, data: c.data }) }
    } catch (err) {
      if (nodeAnswered(err)) return { success: false, data: '0x' }
      throw err
    }
  }
}
