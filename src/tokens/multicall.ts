import { decodeFunctionResult, encodeFunctionData, parseAbi } from 'viem'
import type { UpstreamPool } from '../chains/upstream-pool.ts'
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

/**
 * Reads many view functions at the head: through Multicall3's aggregate3 (one eth_call per
 * batch, each call allowed to fail) where Multicall3 exists, else one eth_call each.
 */
export class MultiReader {
  private hasMulticall: Promise<boolean> | undefined

  constructor(private readonly pool: UpstreamPool) {}

  async read(calls: readonly ContractCall[]): Promise<CallResult[]> {
    if (calls.length === 0) return []
    if (!(await this.multicallAvailable())) return Promise.all(calls.map((c) => this.single(c)))
    const batches: Promise<CallResult[]>[] = []
    for (let i = 0; i < calls.length; i += BATCH) batches.push(this.batch(calls.slice(i, i + BATCH)))
    return (await Promise.all(batches)).flat()
  }

  private multicallAvailable(): Promise<boolean> {
    this.hasMulticall ??= this.pool.call('eth_getCode', [MULTICALL3_ADDRESS, 'latest']).then(
      (out) => typeof out.result === 'string' && out.result !== '0x',
      () => {
        this.hasMulticall = undefined
        return false
      },
    )
    return this.hasMulticall
  }

  private async batch(calls: readonly ContractCall[]): Promise<CallResult[]> {
    const data = encodeFunctionData({
      abi: MULTICALL3_ABI,
      functionName: 'aggregate3',
      args: [calls.map((c) => ({ target: c.target, allowFailure: true, callData: c.data }))],
    })
    const out = await this.pool.call('eth_call', [{ to: MULTICALL3_ADDRESS, data }, 'latest'])
    if (out.error) throw new Error(`Multicall3 aggregate3 failed: ${out.error.message}`)
    const results = decodeFunctionResult({
      abi: MULTICALL3_ABI,
      functionName: 'aggregate3',
      data: out.result as Hex,
    }) as readonly { success: boolean; returnData: Hex }[]
    return results.map((r) => ({ success: r.success, data: r.returnData }))
  }

  private async single(c: ContractCall): Promise<CallResult> {
    const out = await this.pool.call('eth_call', [{ to: c.target, data: c.data }, 'latest'])
    if (out.error || typeof out.result !== 'string') return { success: false, data: '0x' }
    return { success: true, data: out.result as Hex }
  }
}
