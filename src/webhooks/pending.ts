import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import type { z } from 'zod'
import { quantity, transactionSchema } from '../chains/read-schemas.ts'
import { getPendingTransactions, nodeAnswered, readUnchecked } from '../chains/reads.ts'
import type { Network, NetworkRegistry } from '../chains/registry.ts'
import { type BackgroundLoop, periodicLoop } from '../common/background-loop.ts'
import type { Logger } from '../logger.ts'
import type { DB } from '../storage/database.ts'
import type { WebhookConfig } from './config.ts'
import { camelData, envelopeB } from './form-b.ts'

/**
 * `pending_transaction` events: a transaction from or to a watched address entered the
 * mempool. Hashes come from the WebSocket feature's shared upstream stream
 * (newPendingTransactions: the upstream WebSocket, or a polled pending filter), each is read
 * with eth_getTransactionByHash and matched against the network's pending_transaction
 * webhooks. Runs with the singleton jobs (one per cluster). Because a subscription can have
 * gaps (upstream reconnects, the moment between a webhook's creation and the stream going
 * live), the node's `pending` block is also read when watching starts and every
 * `snapshotMs`; event ids are derived from (webhook, transaction), so a transaction seen
 * twice — or by two instances — is one event. Not counted against the daily quota; a
 * pending transaction that never gets mined still fired its event.
 */

/** What the WebSocket feature's per-network stream offers (src/ws/network-streams.ts). */
export interface PendingStreamSource {
  streamsFor(network: Network): {
    add(sub: PendingSubscriber): void
    remove(sub: PendingSubscriber): void
  }
}
export interface PendingSubscriber {
  readonly kind: 'newPendingTransactions'
  deliver(payload: { readonly json: string }): void
}

/** A pending transaction the matcher can use: it must carry its nonce (the event names it). */
const txSchema = transactionSchema.extend({ nonce: quantity })
type PendingTx = z.infer<typeof txSchema>

interface Watcher {
  id: string
  format: string
  addresses: Set<string>
}

export interface PendingWatcherDeps {
  db: DB
  networks: NetworkRegistry
  /** The WebSocket feature's pending stream (src/ws), when it serves one. */
  streams: () => PendingStreamSource | undefined
  logger: Logger
  /** Events inserted: wakes the delivery workers. */
  onEvents: () => void
  /** How often the watched webhooks and pending blocks are re-read; 1 s when absent. */
  snapshotMs?: number
}

export class PendingWatcher {
  private readonly watching = new Map<string, { sub: PendingSubscriber; watchers: Watcher[] }>()
  private readonly seen = new Set<string>()
  private readonly loop: BackgroundLoop

  private readonly db: DB
  private readonly networks: NetworkRegistry
  private readonly streams: () => PendingStreamSource | undefined
  private readonly logger: Logger
  private readonly onEvents: () => void

  constructor(deps: PendingWatcherDeps) {
    this.db = deps.db
    this.networks = deps.networks
    this.streams = deps.streams
    this.logger = deps.logger
    this.onEvents = deps.onEvents
    const snapshotMs = deps.snapshotMs ?? 1_000
    this.loop = periodicLoop({
      failure: 'pending-transaction watcher refresh failed',
      logger: deps.logger,
      intervalMs: snapshotMs,
      work: () => this.refresh(),
    })
  }

  start(): void {
    this.loop.start()
  }

  /** Stops after the refresh in progress, then unsubscribes everywhere. */
  async stop(): Promise<void> {
    await this.loop.stop()
    for (const [slug, w] of this.watching) this.unsubscribe(slug, w.sub)
    this.watching.clear()
  }

  /**
   * Re-reads which webhooks watch pending transactions, subscribes or unsubscribes per
   * network, and reads each watched network's pending block (the gap filler).
   */
  async refresh(): Promise<void> {
    const rows = await this.db
      .selectFrom('webhooks')
      .select(['id', 'chain', 'config', 'format'])
      .where((eb) =>
        eb.or([
          eb('event_type', '=', 'pending_transaction'),
          sql<boolean>`'pending_transaction' = any(event_types)`,
        ]),
      )
      .where('status', '=', 'active')
      .execute()
    const byNetwork = new Map<string, Watcher[]>()
    for (const r of rows) {
      const cfg = JSON.parse(r.config) as WebhookConfig
      const list = byNetwork.get(r.chain) ?? []
      list.push({ id: r.id, format: r.format, addresses: new Set(cfg.addresses ?? []) })
      byNetwork.set(r.chain, list)
    }
    for (const [slug, w] of this.watching) {
      if (!byNetwork.has(slug)) {
        this.unsubscribe(slug, w.sub)
        this.watching.delete(slug)
      }
    }
    for (const [slug, watchers] of byNetwork) {
      let entry = this.watching.get(slug)
      if (!entry) {
        const sub: PendingSubscriber = {
          kind: 'newPendingTransactions',
          deliver: (payload) => {
            const hash = JSON.parse(payload.json) as unknown
            if (typeof hash === 'string') void this.onHash(slug, hash)
          },
        }
        entry = { sub, watchers }
        this.watching.set(slug, entry)
        try {
          this.streams()?.streamsFor(this.networks.getBySlug(slug)).add(sub)
        } catch (err) {
          this.logger.warn({ network: slug, err: (err as Error).message }, 'no pending-transaction stream')
        }
      }
      entry.watchers = watchers
      await this.snapshot(slug)
    }
    if (this.seen.size > 200_000) this.seen.clear()
  }

  private unsubscribe(slug: string, sub: PendingSubscriber): void {
    try {
      this.streams()?.streamsFor(this.networks.getBySlug(slug)).remove(sub)
    } catch {}
  }

  private async snapshot(slug: string): Promise<void> {
    let pending: unknown[]
    try {
      pending = await getPendingTransactions(this.networks.getBySlug(slug))
    } catch (err) {
      // A node without a pending block (or one in another shape): nothing to match now.
      if (nodeAnswered(err)) return
      throw err
    }
    const txs: PendingTx[] = []
    for (const t of pending) {
      const parsed = txSchema.safeParse(t)
      if (parsed.success) txs.push(parsed.data)
    }
    await this.match(slug, txs)
  }

  private async onHash(slug: string, hash: string): Promise<void> {
    if (this.seen.has(`${slug}:${hash}`)) return
    try {
      const tx = await readUnchecked(this.networks.getBySlug(slug), 'eth_getTransactionByHash', [hash])
      const parsed = txSchema.safeParse(tx)
      if (parsed.success) await this.match(slug, [parsed.data])
    } catch (err) {
      this.logger.debug({ network: slug, err: (err as Error).message }, 'pending transaction not read')
    }
  }

  private async match(slug: string, txs: readonly PendingTx[]): Promise<void> {
    const entry = this.watching.get(slug)
    if (!entry || txs.length === 0) return
    const network = this.networks.getBySlug(slug)
    const rows: Array<{ id: string; webhook_id: string; body: string }> = []
    const createdAt = new Date().toISOString()
    for (const tx of txs) {
      const hash = tx.hash.toLowerCase()
      this.seen.add(`${slug}:${hash}`)
      for (const w of entry.watchers) {
        const outgoing = w.addresses.has(tx.from)
        if (!outgoing && !(tx.to && w.addresses.has(tx.to))) continue
        const id = `evt_${createHash('sha256').update(`${w.id}:${hash}`).digest('hex').slice(0, 24)}`
        const data = {
          chain: slug,
          tx_hash: hash,
          from: tx.from,
          to: tx.to ?? null,
          value: tx.value.toString(),
          nonce: Number(tx.nonce),
          asset: network.config.nativeCurrency.symbol,
          direction: outgoing ? 'outgoing' : 'incoming',
        }
        const body =
          w.format === 'B'
            ? envelopeB(id, 'pending_transaction', createdAt, slug, network.chainId ?? 0, camelData(data))
            : { id, event_type: 'pending_transaction', webhook_id: w.id, created_at: createdAt, data }
        rows.push({ id, webhook_id: w.id, body: JSON.stringify(body) })
      }
    }
    if (rows.length === 0) return
    const inserted = await sql<{ id: string }>`
      insert into webhook_events (id, webhook_id, network, block_number, event_type, body, status)
      select v.id, v.webhook_id, null, null, 'pending_transaction', v.body, 'pending'
      from unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.webhook_id)}::text[],
        ${rows.map((r) => r.body)}::text[]) as v(id, webhook_id, body)
      on conflict (id) do nothing
      returning id`.execute(this.db)
    if (inserted.rows.length > 0) this.onEvents()
  }
}
