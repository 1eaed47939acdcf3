import type { DB } from '../storage/database.ts'
import type { Address, Hash } from '../types.ts'
import { setOpState } from './builder-store.ts'
import { insertOpIfFree } from './mempool-insert.ts'
import {
  countLiveOfEntity,
  entityConflict,
  getOp,
  insertOp,
  liveNonces,
  liveOfSender,
  lockSender,
  type NewOp,
  opStatus,
  paymasterCommitted,
  type StoredOp,
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
 * back to the client, so no crash loses it. Accepts are committed one group at a time per
 * process, and on PostgreSQL each sender's under a transaction advisory lock, so the per-sender
 * rules hold across instances sharing the database.
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

/** Most accepts committed in one transaction. */
const MAX_GROUP = 64

interface QueuedAdd {
  op: UserOperation
  ep: EntryPointRef
  v: ValidatedOp
  resolve(hash: Hash): void
  reject(err: unknown): void
}

const alreadyKnown = (hash: Hash, known: StoredOp | null) =>
  invalidFields(
    `UserOperation ${hash} is already known (${known?.state ?? 'seen'}${known?.bundleTx ? ` in ${known.bundleTx}` : ''})`,
  )

export function isStaked(info: StakeInfo, s: MempoolSettings): boolean {
  return info.stake >= s.minStake && info.unstakeDelaySec >= s.minUnstakeDelaySec
}

export interface MempoolDeps {
  db: DB
  network: string
  /** DEFAULT_MEMPOOL when absent. */
  settings?: MempoolSettings
  reputation?: Reputation | undefined
  /** Other processes write this database (PostgreSQL): accepts take a per-sender lock. True when absent. */
  shared?: boolean
}

export class Mempool {
  private readonly db: DB
  readonly network: string
  private readonly settings: MempoolSettings
  private readonly reputation: Reputation | undefined
  private readonly shared: boolean

  constructor(deps: MempoolDeps) {
    this.db = deps.db
    this.network = deps.network
    this.settings = deps.settings ?? DEFAULT_MEMPOOL
    this.reputation = deps.reputation
    this.shared = deps.shared ?? true
  }

  /**
   * Adds a validated op (or replaces the pending one at the same sender and nonce). Returns its
   * hash once the row is committed; the same op sent again returns the same hash.
   *
   * Accepts arriving while a commit is under way are grouped into the next transaction (group
   * commit): one commit for many ops, each answered only after that commit. Each op's checks run
   * before any of its writes, so an op refused by a rule leaves the shared transaction as it
   * found it; any other failure replays the group one op per transaction.
   */
  add(op: UserOperation, ep: EntryPointRef, v: ValidatedOp): Promise<Hash> {
    if (!this.shared && !this.reputation && !paymasterOf(op)) return this.addOneStatement(op, ep, v)
    return this.enqueue(op, ep, v)
  }

  /**
   * PGlite (this process alone writes): the plain new op — no paymaster, no reputation — is one
   * statement holding every check (mempool-insert.ts); anything else takes the group.
   */
  private async addOneStatement(op: UserOperation, ep: EntryPointRef, v: ValidatedOp): Promise<Hash> {
    const staked = isStaked(v.outcome.senderInfo, this.settings)
    const row = this.newOp(op, ep, v, staked)
    if (await insertOpIfFree(this.db, row, staked ? null : this.settings.maxOpsPerUnstakedSender))
      return v.hash
    return this.enqueue(op, ep, v)
  }

  private newOp(op: UserOperation, ep: EntryPointRef, v: ValidatedOp, staked: boolean): NewOp {
    return {
      network: this.network,
      hash: v.hash,
      entryPoint: ep.address,
      op,
      paymaster: paymasterOf(op),
      factory: factoryOf(op),
      prefund: v.outcome.prefund,
      validUntil: v.outcome.validUntil,
      senderStaked: staked,
    }
  }

  private enqueue(op: UserOperation, ep: EntryPointRef, v: ValidatedOp): Promise<Hash> {
    return new Promise<Hash>((resolve, reject) => {
      this.queue.push({ op, ep, v, resolve, reject })
      if (!this.flushing) void this.flush()
    })
  }

  private readonly queue: QueuedAdd[] = []
  private flushing = false

  private async flush(): Promise<void> {
    this.flushing = true
    try {
      while (this.queue.length > 0) await this.commitGroup(this.queue.splice(0, MAX_GROUP))
    } finally {
      this.flushing = false
    }
  }

  private async commitGroup(group: QueuedAdd[]): Promise<void> {
    const results: ({ ok: true; hash: Hash } | { ok: false; err: unknown })[] = []
    try {
      await this.db.transaction().execute(async (trx) => {
        results.length = 0
        // Sender locks (only where other instances share the database), in one order for every
        // instance: two groups never wait on each other in a cycle.
        if (this.shared)
          for (const sender of [...new Set(group.map((g) => g.op.sender))].sort())
            await lockSender(trx, this.network, sender)
        for (const g of group) {
          try {
            results.push({ ok: true, hash: await this.addIn(trx, g.op, g.ep, g.v) })
          } catch (err) {
            if (!(err instanceof BundlerError)) throw err
            results.push({ ok: false, err })
          }
        }
      })
    } catch (err) {
      if (group.length === 1) {
        group[0]?.reject(err)
        return
      }
      for (const g of group) await this.commitGroup([g])
      return
    }
    for (const [i, g] of group.entries()) {
      const r = results[i]
      if (r?.ok) g.resolve(r.hash)
      else g.reject(r?.err ?? new Error('mempool: no result'))
    }
  }

  /** One op's checks, then its writes, in `trx` (its sender locked). */
  private async addIn(trx: DB, op: UserOperation, ep: EntryPointRef, v: ValidatedOp): Promise<Hash> {
    const s = this.settings
    const staked = isStaked(v.outcome.senderInfo, s)
    const paymaster = paymasterOf(op)
    const live = await liveOfSender(trx, this.network, op.sender)
    const existing = live.at(ep.address, op.nonce)
    if (existing?.hash === v.hash) return v.hash
    if (existing) {
      this.checkReplacement(existing, op)
      // Checked before the replaced op is dropped: a refusal must leave no write behind.
      const known = await getOp(trx, this.network, v.hash)
      if (known && known.state !== 'dropped' && known.state !== 'failed') throw alreadyKnown(v.hash, known)
    } else if (!staked) {
      if (live.count >= s.maxOpsPerUnstakedSender)
        throw new BundlerError(
          BundlerErrorCode.entityThrottled,
          `sender ${op.sender} already has ${live.count} UserOperations waiting; an unstaked sender may have at most ${s.maxOpsPerUnstakedSender}: wait for them to be included, or stake the account`,
        )
    }
    await this.reputation?.checkAccept(trx, op, v.outcome)
    await this.checkEntities(trx, op)
    if (paymaster && v.paymasterDeposit !== null) {
      // The op it replaces stops counting against the paymaster.
      const replaced = existing && paymasterOf(existing.op) === paymaster ? existing.prefund : 0n
      const committed = (await paymasterCommitted(trx, this.network, paymaster)) - replaced
      if (committed + v.outcome.prefund > v.paymasterDeposit)
        throw new BundlerError(
          BundlerErrorCode.paymasterDepositTooLow,
          `paymaster deposit too low: paymaster ${paymaster} has a deposit of ${v.paymasterDeposit} wei at the EntryPoint; its waiting ops may cost ${committed} and this one up to ${v.outcome.prefund}: the paymaster must add to its deposit`,
        )
    }
    if (existing)
      await setOpState(trx, this.network, [existing.hash], 'dropped', { reason: `replaced by ${v.hash}` })
    const inserted = await insertOp(trx, this.newOp(op, ep, v, staked))
    // Without a replaced op nothing was written yet, so refusing here leaves no write behind.
    if (!inserted) throw alreadyKnown(v.hash, await getOp(trx, this.network, v.hash))
    await this.reputation?.seen(trx, op)
    return v.hash
  }

  /**
   * ERC-7562 [STO-040]: an address is a sender or another entity across the mempool, never both
   * (a paymaster that is also a pending op's account could change its storage under that op).
   * The messages start with the reference bundler's wording.
   */
  private async checkEntities(trx: DB, op: UserOperation): Promise<void> {
    const entities = [factoryOf(op), paymasterOf(op)].filter((a): a is Address => a !== null)
    const conflict = await entityConflict(trx, this.network, op.sender, entities)
    if (conflict?.kind === 'sender') {
      const role = conflict.address === paymasterOf(op) ? 'paymaster' : 'factory'
      throw new BundlerError(
        BundlerErrorCode.opcodeValidation,
        `${role} ${conflict.address} is used as a sender entity in another UserOperation currently in mempool [STO-040]; wait for that op to be included`,
      )
    }
    if (conflict?.kind === 'entity')
      throw new BundlerError(
        BundlerErrorCode.opcodeValidation,
        `sender ${op.sender} is used as a different entity in another UserOperation currently in mempool (its factory or paymaster) [STO-040]; wait for that op to be included`,
      )
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

  /** State, EntryPoint and bundle of an op, without reading the op itself. */
  status(hash: Hash) {
    return opStatus(this.db, this.network, hash)
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
