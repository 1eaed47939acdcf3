import { getAddress } from 'viem'
import { sleep } from '../common/time.ts'
import type { DB } from '../storage/database.ts'
import { type Address, type Hash, type Hex, toLowerAddress } from '../types.ts'
import { dropPending, liveOps } from './mempool-store.ts'
import type { BundlingMode, NetworkBundler } from './network.ts'
import type { ReputationEntry } from './reputation.ts'
import type { ReputationCounters } from './reputation-store.ts'
import { toRpcUserOperation } from './schema.ts'
import { BundlerError, BundlerErrorCode } from './types.ts'

/**
 * Operator controls, the `debug_bundler_*` methods of the ERC-4337 bundler spec tests, as plain
 * methods (the JSON-RPC route exposes them only where the network config enables them). Results
 * use JavaScript numbers and strings; the route turns quantities into hex where the ERC-4337 spec tests want it.
 */

export interface StakeStatus {
  stakeInfo: { addr: Address; stake: bigint; unstakeDelaySec: bigint }
  isStaked: boolean
}

export class BundlerDebug {
  constructor(
    private readonly net: (network: string) => NetworkBundler,
    private readonly db: DB,
  ) {}

  /** Empties the mempool (pending ops) and forgets all reputation. */
  async clearState(network: string): Promise<'ok'> {
    await this.clearMempool(network)
    await this.clearReputation(network)
    return 'ok'
  }

  /** The ops waiting at `entryPoint` (pending or in a bundle in flight), oldest first, wire shape. */
  async dumpMempool(network: string, entryPoint: Address): Promise<Record<string, Hex>[]> {
    const n = this.net(network)
    const ep = n.entryPoint(entryPoint)
    return (await liveOps(this.db, network, ep.address)).map((o) => toRpcUserOperation(o.op))
  }

  async clearMempool(network: string): Promise<'ok'> {
    this.net(network)
    await dropPending(this.db, network, 'cleared by the operator (debug_bundler_clearMempool)')
    return 'ok'
  }

  /**
   * Builds and sends a bundle now (also in manual mode) and waits up to `waitMs` for it to be
   * mined and settled. Returns its transaction hash, or null when there was nothing to bundle.
   */
  async sendBundleNow(network: string, waitMs = 10_000): Promise<Hash | null> {
    const n = this.net(network)
    // A bundle still in flight is settled first: up to a few rounds until the builder is free.
    let r = await n.round()
    for (let i = 0; r === 'waiting' && i < 50; i++) {
      await sleep(n.spec.pollMs ?? 100)
      r = await n.round()
    }
    if (r === 'locked')
      throw new BundlerError(
        BundlerErrorCode.internal,
        `another instance holds the builder lock of ${network}; send the request there`,
      )
    if (r !== 'sent') return null
    // A round that answers 'sent' has just set lastSent.
    const tx = n.builder.lastSent?.txHash ?? null
    const until = Date.now() + waitMs
    while (Date.now() < until && (await n.round({ build: false })) === 'waiting')
      await sleep(n.spec.pollMs ?? 100)
    return tx
  }

  setBundlingMode(network: string, mode: BundlingMode): 'ok' {
    const n = this.net(network)
    n.mode = mode
    n.wake?.()
    return 'ok'
  }

  async setReputation(network: string, rows: readonly ReputationCounters[]): Promise<'ok'> {
    await this.net(network).reputation.set(rows.map((r) => ({ ...r, address: toLowerAddress(r.address) })))
    return 'ok'
  }

  dumpReputation(network: string): Promise<ReputationEntry[]> {
    return this.net(network).reputation.dump()
  }

  async clearReputation(network: string): Promise<'ok'> {
    await this.net(network).reputation.clear()
    return 'ok'
  }

  /** The EntryPoint's stake record of `address`, and whether it meets this bundler's minimums. */
  async getStakeStatus(network: string, address: Address, entryPoint: Address): Promise<StakeStatus> {
    const n = this.net(network)
    const { stake, unstakeDelaySec } = await n.stakeOf(entryPoint, address)
    return {
      // Checksummed, as the reference bundler answers (the v0.6 spec tests compare the string).
      stakeInfo: { addr: getAddress(address), stake, unstakeDelaySec },
      isStaked: n.isStaked({ stake, unstakeDelaySec }),
    }
  }
}
