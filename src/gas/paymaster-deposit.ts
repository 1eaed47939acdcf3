import { decodeFunctionResult, encodeFunctionData } from 'viem'
import { entryPointAbi } from '../aa/contracts.ts'
import type { RpcCaller } from '../bundler/chain.ts'
import type { EntryPointVersion } from '../bundler/types.ts'
import type { Address, Hex } from '../types.ts'

/**
 * The paymaster's deposit at each EntryPoint (`balanceOf`): what pays for every op it signs.
 * Sponsorship reads it to refuse an op the deposit cannot cover; /ready and metrics read
 * `status()` to say when it runs below the configured floor. Reads are cached for `ttlMs` and a
 * read in flight is shared, so a burst of sponsorships costs one eth_call.
 */

export interface PaymasterRef {
  network: string
  version: EntryPointVersion
  entryPoint: Address
  paymaster: Address
  rpc: RpcCaller
  /** Below this (wei) the deposit is reported low. */
  floorWei: bigint
}

export interface DepositStatus {
  network: string
  version: EntryPointVersion
  paymaster: Address
  entryPoint: Address
  /** Wei as a decimal string; null when the node could not be read. */
  deposit: string | null
  floor: string
  /** The deposit is known and at or above the floor. */
  ok: boolean
  error?: string
}

interface Entry {
  value: bigint
  at: number
}

export class PaymasterDeposits {
  private readonly cache = new Map<string, Entry>()
  private readonly inflight = new Map<string, Promise<bigint>>()

  constructor(
    private readonly refs: readonly PaymasterRef[],
    private readonly ttlMs = 2_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The deposit of `ref`'s paymaster, at most `ttlMs` old. */
  async deposit(ref: PaymasterRef): Promise<bigint> {
    const key = `${ref.network}:${ref.entryPoint}:${ref.paymaster}`
    const hit = this.cache.get(key)
    if (hit && this.now() - hit.at < this.ttlMs) return hit.value
    const running = this.inflight.get(key)
    if (running) return running
    const read = readDeposit(ref).then(
      (value) => {
        this.cache.set(key, { value, at: this.now() })
        this.inflight.delete(key)
        return value
      },
      (err: unknown) => {
        this.inflight.delete(key)
        throw err
      },
    )
    this.inflight.set(key, read)
    return read
  }

  /** Forgets cached values (after a top-up, or in tests). */
  invalidate(): void {
    this.cache.clear()
  }

  /** Every paymaster's deposit against its floor, for /ready and metrics. */
  async status(): Promise<DepositStatus[]> {
    return Promise.all(
      this.refs.map(async (ref) => {
        const base = {
          network: ref.network,
          version: ref.version,
          paymaster: ref.paymaster,
          entryPoint: ref.entryPoint,
          floor: ref.floorWei.toString(),
        }
        try {
          const d = await this.deposit(ref)
          return { ...base, deposit: d.toString(), ok: d >= ref.floorWei }
        } catch (err) {
          return { ...base, deposit: null, ok: false, error: (err as Error).message }
        }
      }),
    )
  }
}

async function readDeposit(ref: PaymasterRef): Promise<bigint> {
  const data = encodeFunctionData({ abi: entryPointAbi, functionName: 'balanceOf', args: [ref.paymaster] })
  const out = await ref.rpc.call('eth_call', [{ to: ref.entryPoint, data }, 'latest'])
  if (out.error) throw new Error(`reading the paymaster deposit failed: ${out.error.message}`)
  return decodeFunctionResult({ abi: entryPointAbi, functionName: 'balanceOf', data: out.result as Hex })
}
