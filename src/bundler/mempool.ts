import type { DB } from '../storage/database.ts'
import type { Address, Hash } from '../types.ts'
import {
  countLiveOfEntity,
  getOp,
  insertOp,
  liveNonces,
  liveOpAt,
  lockSender,
  paymasterCommitted,
  type StoredOp,
  setOpState,
} from './mempool-store.ts'
import type { Reputation } from './reputation.ts'
import {
  BundlerError,
  BundlerErrorCode,
  type EntryPointRef,
  invalidFields,
  type StakeInfo,
  type UserOperation,
} from './types.ts'
import { factoryOf, paymasterOf } from './userop.ts'
import type { ValidatedOp } from './validation.ts'

/**
 * The durable mempool of one network: an accepted op is a committed row before its hash goes
 * back to the client, so no crash loses it. Accepts for one sender are serialised (transaction
 * advisory lock), so the per-sender rules hold across instances sharing the database.
 */

export interface MempoolSettings {
  /** ERC-7562 SAME_SENDER_MEMPOOL_COUNT: live ops an unstaked sender may have. */
  maxOpsPerUnstakedSender: number
  /** A sender with at least this stake and unstake delay is "staked" (ERC-7562 MIN_STAKE_VALUE). */
  minStake: bigint
  minUnstakeDelaySec: bigint
  /** A replacement must raise both fees by at least this many percent. */
  replacementBumpPercent: bigint
}

export const DEFAULT_MEMPOOL: MempoolSettings = {
  maxOpsPerUnstakedSender: 4,
  minStake: 10n ** 18n,
  minUnstakeDelaySec: 86_400n,
  replacementBumpPercent: 10n,
}

const bumped = (v: bigint, percent: bigint) => (v * (100n + percent) + 99n) / 100n

export function isStaked(info: StakeInfo, s: MempoolSettings): boolean {
  return info.stake >= s.minStake && info.unstakeDelaySec >= s.minUnstakeDelaySec
}

export class Mempool {
  constructor(
    private readonly db: DB,
    readonly network: string,
    private readonly settings: MempoolSettings = DEFAULT_MEMPOOL,
    private readonly reputation?: Reputation,
  ) {}

  /**
   * Adds a validated op (or replaces the pending one at the same sender and nonce). Returns its
   * hash once the row is committed; the same op sent again returns the same hash.
   */
  async add(op: UserOperation, ep: EntryPointRef, v: ValidatedOp): Promise<Hash> {
    const s = this.settings
    const staked = isStaked(v.outcome.senderInfo, s)
    const paymaster = paymasterOf(op)
    return this.db.transaction().execute(async (trx) => {
      await lockSender(trx, this.network, op.sender)
      const existing = await liveOpAt(trx, this.network, ep.address, op.sender, op.nonce)
      if (existing?.hash === v.hash) return v.hash
      if (existing) this.checkReplacement(existing, op)
      else if (!staked) {
        const live = await countLiveOfEntity(trx, this.network, 'sender', op.sender)
        if (live >= s.maxOpsPerUnstakedSender)
          throw new BundlerError(
            BundlerErrorCode.entityThrottled,
            `sender ${op.sender} already has ${live} UserOperations waiting; an unstaked sender may have at most ${s.maxOpsPerUnstakedSender}: wait for them to be included, or stake the account`,
          )
      }
      await this.reputation?.checkAccept(trx, op, v.outcome)
      if (existing)
        await setOpState(trx, this.network, [existing.hash], 'dropped', { reason: `replaced by ${v.hash}` })
      if (paymaster && v.paymasterDeposit !== null) {
        const committed = await paymasterCommitted(trx, this.network, paymaster)
        if (committed + v.outcome.prefund > v.paymasterDeposit)
          throw new BundlerError(
            BundlerErrorCode.paymasterDepositTooLow,
            `paymaster ${paymaster} has a deposit of ${v.paymasterDeposit} wei at the EntryPoint; its waiting ops may cost ${committed} and this one up to ${v.outcome.prefund}: the paymaster must add to its deposit`,
          )
      }
      const inserted = await insertOp(trx, {
        network: this.network,
        hash: v.hash,
        entryPoint: ep.address,
        op,
        paymaster,
        factory: factoryOf(op),
        prefund: v.outcome.prefund,
        validUntil: v.outcome.validUntil,
        senderStaked: staked,
      })
      if (!inserted) {
        const known = await getOp(trx, this.network, v.hash)
        throw invalidFields(
          `UserOperation ${v.hash} is already known (${known?.state ?? 'seen'}${known?.bundleTx ? ` in ${known.bundleTx}` : ''})`,
        )
      }
      await this.reputation?.seen(trx, op)
      return v.hash
    })
  }

  private checkReplacement(existing: StoredOp, op: UserOperation): void {
    if (existing.state === 'submitted')
      throw invalidFields(
        `a UserOperation of sender ${op.sender} with nonce 0x${op.nonce.toString(16)} is already in bundle ${existing.bundleTx}: wait for it, or use the next nonce`,
      )
    const p = this.settings.replacementBumpPercent
    const needFee = bumped(existing.op.maxFeePerGas, p)
    const needTip = bumped(existing.op.maxPriorityFeePerGas, p)
    if (op.maxFeePerGas < needFee || op.maxPriorityFeePerGas < needTip)
      throw invalidFields(
        `a UserOperation of sender ${op.sender} with nonce 0x${op.nonce.toString(16)} is already pending (${existing.hash}); to replace it send maxFeePerGas >= ${needFee} and maxPriorityFeePerGas >= ${needTip} (both +${p} %)`,
      )
  }

  get(hash: Hash): Promise<StoredOp | null> {
    return getOp(this.db, this.network, hash)
  }

  /** Live nonces of `sender` under `key` at `entryPoint`, lowest first. */
  liveNonces(entryPoint: Address, sender: Address, key: bigint): Promise<bigint[]> {
    return liveNonces(this.db, this.network, entryPoint, sender, key)
  }

  /** Live ops count of a sender (tests, debug_bundler_dumpMempool later). */
  liveOfSender(sender: Address): Promise<number> {
    return countLiveOfEntity(this.db, this.network, 'sender', sender)
  }
}
