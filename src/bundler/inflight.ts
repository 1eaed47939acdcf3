import { parseTransaction } from 'viem'
import type { Logger } from '../logger.ts'
import type { DB } from '../storage/database.ts'
import type { Hash } from '../types.ts'
import { moveOpsToBundle, opsOfBundle, setOpState } from './builder-store.ts'
import {
  insertBundle,
  minedSince,
  openBundles,
  replacedBy,
  type StoredBundle,
  setBundleState,
} from './bundle-store.ts'
import type { BlockInfo, BundlerChain, RawReceipt } from './chain.ts'
import type { Executor } from './executor.ts'
import type { StoredOp } from './mempool-store.ts'
import { userOpEvents, userOpReceipt } from './receipts.ts'

/**
 * Bundle transactions after they are sent, until they are final: mined (ops included or
 * failed), reverted or dropped (ops back to the pool), stuck (re-sent at the same executor nonce
 * with both fees raised), or reorged out after being mined (back in flight: re-sent, or back to
 * the pool if the executor's nonce moved on). Every state change is committed before the
 * transaction it describes is broadcast, so a crash anywhere leaves a state the next round
 * (here or on another instance) finishes.
 */

export interface InFlightSettings {
  /** A bundle not mined this many blocks after it was sent is re-sent with higher fees. */
  stuckBlocks: number
  /** …or this long after, whichever comes first (a chain whose blocks stopped). */
  stuckMs: number
  /** Each re-send raises both fees by at least this many percent (nodes require 10). */
  feeBumpPercent: bigint
  /** Re-sends with higher fees before the builder just keeps re-broadcasting the last one. */
  maxFeeBumps: number
  /** Mined bundles this many blocks below the head are still checked against the canonical chain. */
  reorgDepth: number
  /**
   * At most one reorg check per this many ms (and only when the head changed): each check reads
   * the block of every bundle mined within reorgDepth, which on a fast chain is many per second.
   */
  reorgCheckMs: number
  /**
   * How long a bundle whose executor nonce moved on may still show its receipt before it counts
   * as dropped (a node can move the nonce before its receipt is readable).
   */
  nonceMovedGraceMs: number
}

export const DEFAULT_IN_FLIGHT: InFlightSettings = {
  stuckBlocks: 3,
  stuckMs: 60_000,
  feeBumpPercent: 12n,
  maxFeeBumps: 10,
  reorgDepth: 64,
  reorgCheckMs: 1000,
  nonceMovedGraceMs: 2000,
}

/** What the rest of the bundler learns from bundles settling (reputation, metrics). */
export interface InFlightHooks {
  mined?(ops: readonly StoredOp[], receipt: RawReceipt): Promise<void> | void
  notLanded?(reason: 'failed' | 'dropped', ops: number): void
  reorged?(ops: number): void
  bumped?(): void
}

export interface InFlightDeps {
  network: string
  chain: BundlerChain
  executor: Executor
  logger: Logger
  settings: InFlightSettings
  hooks?: InFlightHooks
}

const raised = (v: bigint, percent: bigint) => {
  const up = (v * (100n + percent) + 99n) / 100n
  return up > v ? up : v + 1n
}

export class InFlight {
  /** Bundles whose executor nonce moved on while no receipt was found yet, and since when. */
  private readonly nonceMovedAt = new Map<Hash, number>()
  /** The head the last reorg check ran at: the check repeats only when the head changes. */
  private checkedHead: Hash | null = null
  private checkedAt = 0

  constructor(private readonly d: InFlightDeps) {}

  /** Settles every open bundle; true while one is still waiting to be mined. */
  async settleAll(db: DB, head: BlockInfo): Promise<boolean> {
    let waiting = false
    for (const b of await openBundles(db, this.d.network))
      if (!(await this.settle(db, b, head))) waiting = true
    return waiting
  }

  /** False while `b` (or a transaction it replaced) is still waiting to be mined. */
  private async settle(db: DB, b: StoredBundle, head: BlockInfo): Promise<boolean> {
    const { chain, network, logger } = this.d
    // The nonce is read before the receipts: a transaction mined in between is then still found,
    // and a moved nonce with no receipt really means another transaction took it.
    const nonce = await chain.transactionCount(b.executor, 'latest')
    const receipt = await chain.receipt(b.txHash)
    if (receipt?.blockNumber) {
      this.nonceMovedAt.delete(b.txHash)
      await this.mined(db, b, b, receipt)
      return true
    }
    const earlier = await replacedBy(db, network, b)
    for (const p of earlier) {
      const r = await chain.receipt(p.txHash)
      if (r?.blockNumber) {
        this.nonceMovedAt.delete(b.txHash)
        await this.mined(db, b, p, r)
        return true
      }
    }
    if (nonce > b.executorNonce) {
      // The executor's nonce moved on with no receipt found: something else took the nonce —
      // or the node has not indexed the receipt yet (anvil moves the nonce first). Only a
      // receipt still missing on a later round, nonceMovedGraceMs on, says it was dropped.
      const since = this.nonceMovedAt.get(b.txHash)
      if (since === undefined) {
        this.nonceMovedAt.set(b.txHash, Date.now())
        return false
      }
      if (Date.now() - since < this.d.settings.nonceMovedGraceMs) return false
      this.nonceMovedAt.delete(b.txHash)
      await this.unbundle(db, b, 'dropped', 'bundle transaction was replaced or dropped by the node')
      return true
    }
    const sentBlock = b.sentBlock ?? head.number
    const stuck =
      head.number - sentBlock >= BigInt(this.d.settings.stuckBlocks) ||
      Date.now() - b.updatedAt.getTime() >= this.d.settings.stuckMs
    if (stuck && earlier.length < this.d.settings.maxFeeBumps) {
      await this.bump(db, b, head)
      return false
    }
    const sent = await chain.sendRaw(b.rawTx)
    if (!sent.ok) logger.warn({ network, tx: b.txHash, err: sent.message }, 'bundle re-broadcast refused')
    return false
  }

  /**
   * `minedTx` (the bundle `carrier` or one it replaced) is mined: the ops `carrier` holds are
   * included, failed (their call reverted) or, when the EntryPoint left them out, pending again.
   */
  private async mined(
    db: DB,
    carrier: StoredBundle,
    minedTx: StoredBundle,
    receipt: RawReceipt,
  ): Promise<void> {
    const { network } = this.d
    if (receipt.status !== '0x1') {
      await this.unbundle(db, carrier, 'failed', `bundle transaction ${minedTx.txHash} reverted`, minedTx)
      return
    }
    const ops = await opsOfBundle(db, network, carrier.txHash)
    const blockNumber = BigInt(receipt.blockNumber)
    const events = new Map(userOpEvents(receipt, carrier.entryPoint).map((e) => [e.userOpHash, e]))
    const succeeded: Hash[] = []
    const reverted: StoredOp[] = []
    const missing: Hash[] = []
    for (const o of ops) {
      const e = events.get(o.hash)
      if (!e) missing.push(o.hash)
      else if (e.success) succeeded.push(o.hash)
      else reverted.push(o)
    }
    await db.transaction().execute(async (trx) => {
      const at = { blockNumber, blockHash: receipt.blockHash, bundleTx: minedTx.txHash }
      await setOpState(trx, network, succeeded, 'included', at)
      for (const o of reverted) {
        const reason = userOpReceipt(receipt, carrier.entryPoint, o.hash)?.reason ?? '0x'
        await setOpState(trx, network, [o.hash], 'failed', {
          ...at,
          reason: `execution reverted${reason === '0x' ? '' : ` (${reason})`}`,
        })
      }
      await setOpState(trx, network, missing, 'pending', {
        bundleTx: null,
        reason: 'not in its mined bundle',
      })
      await this.closeNonce(trx, carrier, minedTx.txHash)
      await setBundleState(trx, network, minedTx.txHash, 'included', {
        blockNumber,
        blockHash: receipt.blockHash,
        reason: null,
      })
    })
    const landed = ops.filter((o) => !missing.includes(o.hash))
    await this.d.hooks?.mined?.(landed, receipt)
    this.d.logger.info(
      { network, tx: minedTx.txHash, block: blockNumber.toString(), ops: landed.length },
      'bundle mined',
    )
  }

  /** The bundle did not land: its ops go back to the pool (each attempt counted). */
  async unbundle(
    db: DB,
    b: StoredBundle,
    state: 'failed' | 'dropped',
    reason: string,
    minedTx: StoredBundle = b,
  ): Promise<void> {
    const { network } = this.d
    const ops = await db.transaction().execute(async (trx) => {
      const ops = await opsOfBundle(trx, network, b.txHash)
      await setOpState(
        trx,
        network,
        ops.map((o) => o.hash),
        'pending',
        { bundleTx: null, reason },
      )
      await this.closeNonce(trx, b, minedTx.txHash)
      await setBundleState(trx, network, minedTx.txHash, state, { reason })
      return ops
    })
    this.d.hooks?.notLanded?.(state, ops.length)
    this.d.logger.warn(
      { network, tx: minedTx.txHash, reason },
      'bundle did not land; its ops are pending again',
    )
  }

  /** Every transaction at `b`'s executor nonce other than `keep` is dropped: only one can land. */
  private async closeNonce(trx: DB, b: StoredBundle, keep: Hash): Promise<void> {
    const siblings = [b, ...(await replacedBy(trx, this.d.network, b))].filter((x) => x.txHash !== keep)
    for (const s of siblings)
      await setBundleState(trx, this.d.network, s.txHash, 'dropped', {
        reason: `another transaction at executor nonce ${b.executorNonce} (${keep}) settled it`,
      })
  }

  /** Re-signs `b` at the same nonce with both fees raised; recorded before it is sent. */
  private async bump(db: DB, b: StoredBundle, head: BlockInfo): Promise<void> {
    const { network, chain, executor, logger, settings } = this.d
    const tx = parseTransaction(b.rawTx)
    if (tx.type !== 'eip1559' || !tx.to || tx.gas === undefined) return
    const oldFee = tx.maxFeePerGas ?? 0n
    const oldTip = tx.maxPriorityFeePerGas ?? 0n
    const tip = raised(oldTip, settings.feeBumpPercent)
    let fee = raised(oldFee, settings.feeBumpPercent)
    if (fee < head.baseFeePerGas + tip) fee = head.baseFeePerGas + tip
    const signed = await executor.sign({
      to: tx.to,
      data: tx.data ?? '0x',
      gas: tx.gas,
      nonce: b.executorNonce,
      maxFeePerGas: fee,
      maxPriorityFeePerGas: tip,
    })
    await db.transaction().execute(async (trx) => {
      await insertBundle(trx, network, {
        txHash: signed.hash,
        entryPoint: b.entryPoint,
        executor: b.executor,
        executorNonce: b.executorNonce,
        rawTx: signed.raw,
        sentBlock: head.number,
      })
      await moveOpsToBundle(trx, network, b.txHash, signed.hash)
      await setBundleState(trx, network, b.txHash, 'replaced', { reason: `fees raised in ${signed.hash}` })
    })
    this.d.hooks?.bumped?.()
    const sent = await chain.sendRaw(signed.raw)
    logger.warn(
      {
        network,
        stuck: b.txHash,
        replacement: signed.hash,
        maxFeePerGas: fee.toString(),
        maxPriorityFeePerGas: tip.toString(),
        ...(sent.ok ? {} : { err: sent.message }),
      },
      'bundle stuck; re-sent with higher fees',
    )
  }

  /**
   * Bundles mined in blocks that are no longer canonical go back in flight: the next settle
   * finds them mined again, re-sends the same transaction, or (the executor nonce having moved
   * on) returns their ops to the pool. Returns how many bundles were reorged out.
   */
  async checkReorgs(db: DB, head: BlockInfo): Promise<number> {
    if (head.hash === this.checkedHead || Date.now() - this.checkedAt < this.d.settings.reorgCheckMs) return 0
    const { network, chain } = this.d
    const mined = await minedSince(db, network, head.number - BigInt(this.d.settings.reorgDepth))
    const numbers = [...new Set(mined.map((m) => m.blockNumber))]
    const canonical = new Map(
      await Promise.all(numbers.map(async (n) => [n, await chain.blockHashAt(n)] as const)),
    )
    const gone = mined.filter((m) => canonical.get(m.blockNumber) !== m.blockHash)
    for (const m of gone) {
      const ops = await db.transaction().execute(async (trx) => {
        const ops = await opsOfBundle(trx, network, m.txHash, ['included', 'failed'])
        await setOpState(
          trx,
          network,
          ops.map((o) => o.hash),
          'submitted',
          { blockNumber: null, blockHash: null, reason: null },
        )
        await setBundleState(trx, network, m.txHash, 'submitted', {
          blockNumber: null,
          blockHash: null,
          reason: `reorged out of block ${m.blockNumber} (${m.blockHash})`,
          sentBlock: head.number,
        })
        return ops
      })
      this.d.hooks?.reorged?.(ops.length)
      this.d.logger.warn(
        { network, tx: m.txHash, block: m.blockNumber.toString(), ops: ops.length },
        'bundle reorged out; back in flight',
      )
    }
    this.checkedHead = head.hash
    this.checkedAt = Date.now()
    return gone.length
  }
}
