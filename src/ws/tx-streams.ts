import { readUnchecked } from '../chains/reads.ts'
import type { Network } from '../chains/registry.ts'
import type { Logger } from '../logger.ts'
import { BlockReads } from './block-reads.ts'
import { PushPayload } from './push-frame.ts'
import type { Head } from './routes.ts'
import {
  type ChainTx,
  type MinedFilter,
  matchesMined,
  matchesPending,
  needsPendingBody,
  type PendingFilter,
  toChainTx,
} from './tx-filters.ts'

/** A subscriber of Alchemy's transaction kinds, as this fan-out sees it. */
export interface TxSubscriber {
  readonly mined?: MinedFilter
  readonly pending?: PendingFilter
  deliver(payload: PushPayload): void
}

/**
 * Pending lookups under way at once; hashes beyond it are not looked up (the pending stream is
 * best effort anyway), so a burst of pending transactions cannot flood the upstream.
 */
export const MAX_PENDING_LOOKUPS = 128

interface Options {
  readonly requestTimeoutMs: number
  readonly keepBlocks: number
}

export interface TxStreamsDeps {
  network: Network
  /** `alchemy_minedTransactions` subscribers. */
  mined: ReadonlySet<TxSubscriber>
  /** `alchemy_pendingTransactions` subscribers. */
  pending: ReadonlySet<TxSubscriber>
  opts: Options
  logger: Logger
  /** Pushes sent per kind, for the stream's metrics. */
  counted: (n: number, kind: 'mined' | 'pending') => void
}

/**
 * `alchemy_minedTransactions` and `alchemy_pendingTransactions` on top of the streams the
 * network already holds: each new block (from the head tracker, in order, reorgs included) is
 * read once with its transactions and filtered locally per subscriber; each pending hash is
 * looked up once, and only when some subscriber needs more than the hash. Payloads are built
 * once per transaction and shape, then shared by every subscriber that matches.
 */
export class TxStreams {
  /** Each block read once with its transactions. */
  private readonly blocks: BlockReads<ChainTx>
  private lookups = 0
  /** Pending hashes not looked up because MAX_PENDING_LOOKUPS were under way (tests, metrics). */
  skippedLookups = 0

  private readonly network: Network
  private readonly mined: ReadonlySet<TxSubscriber>
  private readonly pending: ReadonlySet<TxSubscriber>
  private readonly opts: Options
  private readonly counted: (n: number, kind: 'mined' | 'pending') => void

  constructor(deps: TxStreamsDeps) {
    const { network, opts, logger } = deps
    this.network = network
    this.mined = deps.mined
    this.pending = deps.pending
    this.opts = opts
    this.counted = deps.counted
    this.blocks = new BlockReads(network, opts, logger, {
      method: 'eth_getBlockByHash',
      params: (block) => [block.hash, true],
      items: (result) => {
        const list = (result as { transactions?: unknown } | null)?.transactions
        if (!Array.isArray(list)) throw new Error('eth_getBlockByHash returned no transaction list')
        return list.flatMap((raw) => toChainTx(raw) ?? [])
      },
      missed: 'alchemy_minedTransactions subscribers',
    })
  }

  /** The heads stream stopped or no mined subscriber is left: forget the blocks read. */
  reset(): void {
    this.blocks.clear()
  }

  /** In order: transactions a reorg undid (removed: true, to those who asked), then new blocks'. */
  async onBlocks(added: readonly Head[], removed: readonly Head[]): Promise<void> {
    for (const block of removed) {
      const txs = this.blocks.take(block.hash)
      if (!txs) continue
      for (let i = txs.length - 1; i >= 0; i--) this.fanOutMined(txs[i]!, true)
    }
    if (this.mined.size === 0) return
    for (const block of added) {
      for (const tx of await this.blocks.fetch(block)) this.fanOutMined(tx, false)
    }
  }

  private fanOutMined(tx: ChainTx, removed: boolean): void {
    let full: PushPayload | undefined
    let hashOnly: PushPayload | undefined
    let n = 0
    for (const sub of this.mined) {
      const f = sub.mined
      if (!f || (removed && !f.includeRemoved) || !matchesMined(tx, f)) continue
      if (f.hashesOnly) {
        hashOnly ??= new PushPayload(JSON.stringify({ removed, transaction: { hash: tx.wire.hash } }))
        sub.deliver(hashOnly)
      } else {
        full ??= new PushPayload(JSON.stringify({ removed, transaction: tx.wire }))
        sub.deliver(full)
      }
      n++
    }
    this.counted(n, 'mined')
  }

  /** One pending hash from the upstream stream. */
  async onPendingHash(hash: string): Promise<void> {
    if (this.pending.size === 0) return
    let needBody = false
    for (const sub of this.pending) if (sub.pending && needsPendingBody(sub.pending)) needBody = true
    if (needBody && this.lookups >= MAX_PENDING_LOOKUPS) {
      this.skippedLookups++
      needBody = false
    }
    const tx = needBody ? await this.pendingTx(hash) : undefined
    const hashPayload = new PushPayload(JSON.stringify(hash))
    let full: PushPayload | undefined
    let n = 0
    for (const sub of this.pending) {
      const f = sub.pending
      if (!f) continue
      if (needsPendingBody(f)) {
        // Gone already (mined or dropped) or unreadable: nothing to match against.
        if (!tx || !matchesPending(tx, f)) continue
        if (f.hashesOnly) sub.deliver(hashPayload)
        else {
          full ??= new PushPayload(JSON.stringify(tx.wire))
          sub.deliver(full)
        }
      } else sub.deliver(hashPayload)
      n++
    }
    this.counted(n, 'pending')
  }

  private async pendingTx(hash: string): Promise<ChainTx | undefined> {
    this.lookups++
    try {
      const tx = await readUnchecked(this.network, 'eth_getTransactionByHash', [hash], {
        timeoutMs: this.opts.requestTimeoutMs,
      })
      return tx === null ? undefined : toChainTx(tx)
    } catch {
      return undefined
    } finally {
      this.lookups--
    }
  }
}
