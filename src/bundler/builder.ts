import type { Logger } from '../logger.ts'
import type { DB } from '../storage/database.ts'
import type { Address, Hash } from '../types.ts'
import { pendingOps, setOpState } from './builder-store.ts'
import { insertBundle } from './bundle-store.ts'
import type { BlockInfo, BundlerChain } from './chain.ts'
import { failedOpIndex, revertToError } from './entrypoint.ts'
import type { Executor } from './executor.ts'
import { DEFAULT_IN_FLIGHT, InFlight, type InFlightHooks, type InFlightSettings } from './inflight.ts'
import type { StoredOp } from './mempool-store.ts'
import type { EntryPointRef } from './types.ts'
import { encodeHandleOps } from './userop.ts'

/**
 * Turns a network's pending ops into bundle transactions. One round (`tick`) first checks mined
 * bundles against reorgs and settles the bundle in flight (inflight.ts), then, if none is, builds
 * the next one for one EntryPoint: best fee first, one op per sender (a sender's next nonce under
 * a key only once the one before it is mined), expired ops dropped, the rest simulated together
 * as one `handleOps` (an eth_call at the ops' own gas limits; eth_estimateGas when that fails)
 * and every op the EntryPoint names in a `FailedOp` dropped with its reason, until the bundle
 * passes.
 *
 * The signed transaction and the ops' `submitted` state are committed before it is broadcast:
 * after a crash the next round (here or on another instance) re-sends the same bytes or finds
 * the receipt, so no op is bundled twice. One bundle in flight per network keeps the executor's
 * nonce simple; bundles go out as fast as blocks come.
 */

export interface BuilderSettings extends InFlightSettings {
  maxOpsPerBundle: number
  /** Bundle attempts (a re-simulation failure or a reverted bundle each count) before an op is dropped. */
  maxAttempts: number
}

/**
 * 32 ops a bundle: each builder round (node reads, a simulation, a signed transaction, a commit)
 * is shared by more ops, so a burst is included in fewer rounds; ops stop joining a bundle before
 * their gas limits add up past the block's.
 */
export const DEFAULT_BUILDER: BuilderSettings = { maxOpsPerBundle: 32, maxAttempts: 5, ...DEFAULT_IN_FLIGHT }

export interface BuilderHooks extends InFlightHooks {
  /** The ops a bundle may carry, in order (reputation: a throttled entity's ops per bundle). */
  admit?(ops: StoredOp[]): Promise<StoredOp[]> | StoredOp[]
  /** An op that passed validation failed the bundle's re-simulation (ERC-7562 GREP-040). */
  failedInBundle?(op: StoredOp, reason: string): Promise<void> | void
  sent?(ops: number): void
}

export interface BuilderDeps {
  network: string
  chain: BundlerChain
  entryPoints: readonly EntryPointRef[]
  executor: Executor
  logger: Logger
  settings: BuilderSettings
  hooks?: BuilderHooks
  /** Contracts whose storage an op's validation accessed, by op hash (safe mode; STO-041). */
  storageAccess?: ReadonlyMap<Hash, readonly Address[]>
}

export type TickResult = 'idle' | 'waiting' | 'sent'

export interface SentBundle {
  txHash: Hash
  ops: number
}

export class BundleBuilder {
  private nextEntryPoint = 0
  private readonly inFlight: InFlight
  /** The last bundle this builder sent (debug_bundler_sendBundleNow answers with it). */
  lastSent: SentBundle | null = null

  constructor(private readonly d: BuilderDeps) {
    this.inFlight = new InFlight({ ...d, settings: d.settings })
  }

  /**
   * One round on `db` (the connection holding the network's builder lock, or PGlite). With
   * `build` false (manual bundling mode) bundles in flight are followed but no new one is built.
   */
  async tick(db: DB, opts: { build?: boolean } = {}): Promise<TickResult> {
    const head = await this.d.chain.block('latest')
    await this.inFlight.checkReorgs(db, head)
    if (await this.inFlight.settleAll(db, head)) return 'waiting'
    if (opts.build === false) return 'idle'
    const eps = this.d.entryPoints
    for (let i = 0; i < eps.length; i++) {
      const ep = eps[(this.nextEntryPoint + i) % eps.length] as EntryPointRef
      if (await this.build(db, ep, head)) {
        this.nextEntryPoint = (this.nextEntryPoint + i + 1) % eps.length
        return 'sent'
      }
    }
    return 'idle'
  }

  /**
   * ERC-7562 [STO-041]: an op whose validation accessed the storage of another pending op's
   * sender waits in the mempool (as the reference bundler, it is kept out of the bundle while
   * that sender has ops pending): that op's execution could change what it validated against.
   */
  private touchesOtherSender(c: StoredOp, known: ReadonlySet<string>): boolean {
    const own = c.op.sender.toLowerCase()
    return (this.d.storageAccess?.get(c.hash) ?? []).some((a) => a !== own && known.has(a))
  }

  /** Builds, records and sends one bundle for `ep`; false when there was nothing to send. */
  private async build(db: DB, ep: EntryPointRef, head: BlockInfo): Promise<boolean> {
    const { chain, network, executor, settings, hooks } = this.d
    const now = BigInt(Math.max(Math.floor(Date.now() / 1000), Number(head.timestamp)))
    // Room for ops passed over (a sender's second op, a fee under the base fee); every row read
    // is parsed, every round.
    const candidates = await pendingOps(db, network, ep.address, settings.maxOpsPerBundle * 2)
    const senders = new Set<string>()
    const known = new Set(candidates.map((c) => c.op.sender.toLowerCase()))
    let ops: StoredOp[] = []
    let gasSum = BUNDLE_BASE_GAS
    for (const c of candidates) {
      if (c.validUntil !== null && BigInt(c.validUntil) <= now + 2n)
        await this.drop(db, c, `expired: validUntil ${c.validUntil} passed before it could be bundled`)
      else if (c.attempts >= settings.maxAttempts)
        await this.drop(
          db,
          c,
          `not included after ${c.attempts} bundle attempts (last: ${c.reason ?? 'unknown'})`,
        )
      else if (c.op.maxFeePerGas < head.baseFeePerGas || senders.has(c.op.sender)) continue
      else if (this.touchesOtherSender(c, known)) continue
      else if (ops.length < settings.maxOpsPerBundle) {
        const gas = opGasLimit(c)
        // The first op always goes (alone it is capped at the block's limit, as before).
        if (ops.length > 0 && gasSum + gas > head.gasLimit) continue
        gasSum += gas
        senders.add(c.op.sender)
        ops.push(c)
      }
    }
    if (hooks?.admit && ops.length > 0) ops = await hooks.admit(ops)
    let gas: bigint | undefined
    while (ops.length > 0 && gas === undefined) {
      const data = encodeHandleOps(
        ops.map((o) => o.op),
        executor.address,
      )
      // One execution with the ops' own limits as the gas limit settles a passing bundle; only
      // a failing one pays for eth_estimateGas's search (it names the failing op, or says the
      // limit was short). anvil runs EVM calls one at a time, so every accept waits behind this.
      const limit = bundleGasLimit(ops, head.gasLimit)
      const quick = await chain.call({ from: executor.address, to: ep.address, data, gas: limit })
      if (quick.ok) {
        gas = limit
        break
      }
      const est = await chain.estimateGas({ from: executor.address, to: ep.address, data })
      if (est.ok) {
        // The limits were short for the bundle as a whole: the node's estimate, with headroom.
        if (est.gas !== undefined) gas = lesser((est.gas * 5n) / 4n + 20_000n, head.gasLimit)
        break
      }
      const i = failedOpIndex(est.revert)
      const failing = i === null ? undefined : ops[i]
      if (failing) {
        const reason = revertToError(est.revert, est.message).message
        await this.drop(db, failing, reason)
        await hooks?.failedInBundle?.(failing, reason)
        ops = ops.filter((o) => o !== failing)
      } else if (ops.length === 1) {
        await this.drop(db, ops[0] as StoredOp, `handleOps reverted: ${est.message}`)
        ops = []
      } else {
        // An unattributed revert: keep only the ops that pass alone.
        const alone = await Promise.all(
          ops.map((o) =>
            chain.estimateGas({
              from: executor.address,
              to: ep.address,
              data: encodeHandleOps([o.op], executor.address),
            }),
          ),
        )
        for (const [k, r] of alone.entries())
          if (!r.ok) await this.drop(db, ops[k] as StoredOp, revertToError(r.revert, r.message).message)
        ops = ops.filter((_, k) => alone[k]?.ok)
      }
    }
    if (ops.length === 0 || gas === undefined) return false

    const min = (f: (o: StoredOp) => bigint) => ops.map(f).reduce(lesser)
    const maxFeePerGas = min((o) => o.op.maxFeePerGas)
    const tip = min((o) => o.op.maxPriorityFeePerGas)
    const nonce = await chain.transactionCount(executor.address, 'pending')
    const signed = await executor.sign({
      to: ep.address,
      data: encodeHandleOps(
        ops.map((o) => o.op),
        executor.address,
      ),
      gas,
      nonce,
      maxFeePerGas,
      maxPriorityFeePerGas: lesser(tip, maxFeePerGas),
    })
    const hashes = ops.map((o) => o.hash)
    const bundle = {
      txHash: signed.hash,
      entryPoint: ep.address,
      executor: executor.address,
      executorNonce: nonce,
      rawTx: signed.raw,
      sentBlock: head.number,
    }
    await db.transaction().execute(async (trx) => {
      await insertBundle(trx, network, bundle)
      await setOpState(trx, network, hashes, 'submitted', { bundleTx: signed.hash, reason: null })
    })
    const sent = await chain.sendRaw(signed.raw)
    if (!sent.ok) {
      await this.inFlight.unbundle(
        db,
        { ...bundle, updatedAt: new Date() },
        'dropped',
        `bundle transaction refused by the node: ${sent.message}`,
      )
      return false
    }
    this.lastSent = { txHash: signed.hash, ops: hashes.length }
    hooks?.sent?.(hashes.length)
    this.d.logger.info(
      { network, tx: signed.hash, entryPoint: ep.address, ops: hashes.length },
      'bundle sent',
    )
    return true
  }

  private async drop(db: DB, op: StoredOp, reason: string): Promise<void> {
    await setOpState(db, this.d.network, [op.hash], 'dropped', { reason })
    this.d.logger.info({ network: this.d.network, userOpHash: op.hash, reason }, 'UserOperation dropped')
  }
}

/**
 * Gas a bundle transaction may use at most: what the EntryPoint lets each op use (its prefund
 * gas: v0.6 counts verificationGasLimit three times with a paymaster, for postOp), the
 * transaction's base cost, and room for handleOps's own loop; never above the block's limit.
 */
export function bundleGasLimit(ops: readonly StoredOp[], blockGasLimit: bigint): bigint {
  let total = BUNDLE_BASE_GAS
  for (const o of ops) total += opGasLimit(o)
  return lesser(total, blockGasLimit)
}

/** The transaction's base cost and handleOps's own loop. */
const BUNDLE_BASE_GAS = 21_000n + 50_000n

/** What one op adds to its bundle's gas limit (bundleGasLimit). */
function opGasLimit({ op }: StoredOp): bigint {
  const limits =
    op.version === 'v06'
      ? op.preVerificationGas +
        op.callGasLimit +
        op.verificationGasLimit * (op.paymasterAndData === '0x' ? 1n : 3n)
      : op.preVerificationGas +
        op.callGasLimit +
        op.verificationGasLimit +
        op.paymasterVerificationGasLimit +
        op.paymasterPostOpGasLimit
  return limits + 10_000n
}

/** Math.min for bigint (Math.min takes numbers only). */
function lesser(a: bigint, b: bigint): bigint {
  if (a < b) return a
  return b
}
