import { afterAll, beforeAll, expect, it } from 'vitest'
import { nativeTransfersBlock } from '../../test/fixtures/webhooks/test-blocks.ts'
import { describeEachStorage, type TestStorage } from '../../test/helpers/storage.ts'
import { NetworkRegistry } from '../chains/registry.ts'
import { createLogger } from '../logger.ts'
import type { Address } from '../types.ts'
import { matchKeys } from './config.ts'
import { WebhookMatcher } from './matcher.ts'
import { ReceiptReader } from './receipts.ts'
import * as store from './store.ts'
import { TokenMetadata } from './token-metadata.ts'

/**
 * The daily delivery quota (1,000 per day on the free plan), in the matcher on a
 * real database. The clock is injected (MatcherOptions.now) so the test can step into the next
 * UTC day; the blocks are synthetic native transfers (test/fixtures/webhooks/test-blocks.ts), 1,001 to one address.
 */
const NET = 'ethereum-devnet'
const A = '0x00000000000000000000000000000000000000a1' as Address

describeEachStorage('webhook delivery quota on $name', (backend) => {
  let storage: TestStorage
  let matcher: WebhookMatcher
  let now = new Date('2026-03-01T23:59:00Z')

  const statuses = async (n: number) =>
    (
      await storage.db
        .selectFrom('webhook_events')
        .select(['webhook_id', 'status'])
        .where('block_number', '=', String(n))
        .orderBy('webhook_id')
        .execute()
    ).map((r) => `${r.webhook_id}:${r.status}`)

  const onBlock = async (n: number, count: number) => {
    const b = nativeTransfersBlock(
      NET,
      n,
      Array.from({ length: count }, () => A),
    )
    await storage.db.transaction().execute((trx) => matcher.onBlock(trx, b))
  }

  beforeAll(async () => {
    storage = await backend.open()
    const networks = new NetworkRegistry([])
    matcher = new WebhookMatcher({
      db: storage.db,
      tokens: new TokenMetadata(networks),
      receipts: new ReceiptReader(networks),
      nativeSymbol: () => 'ETH',
      logger: createLogger('silent'),
      quotaOf: (plan) => (plan === 'free' ? 1000 : null),
      now: () => now,
    })
    await storage.db
      .insertInto('accounts')
      .values({ id: 'acct_free', email: 'free@q.test', plan: 'free' })
      .execute()
    await storage.db
      .insertInto('accounts')
      .values({ id: 'acct_ent', email: 'ent@q.test', plan: 'enterprise' })
      .execute()
    for (const [id, account] of [
      ['wh_free', 'acct_free'],
      ['wh_ent', 'acct_ent'],
    ] as const) {
      await store.insertWebhook(
        storage.db,
        {
          id,
          account_id: account,
          notify_email: null,
          url: 'https://example.com/',
          chain: NET,
          event_type: 'address_activity',
          config: JSON.stringify({ addresses: [A] }),
          secret_enc: 'x',
          status: 'active',
        },
        matchKeys('address_activity', { addresses: [A] }),
      )
    }
  })
  afterAll(async () => {
    await storage?.close()
  })

  it('records the 1,001st event of a free account’s UTC day as over quota, never claims it, and resumes the next day', async () => {
    await onBlock(1, 1001)
    const events = await storage.db
      .selectFrom('webhook_events')
      .select(['id', 'webhook_id', 'status', 'last_error'])
      .where('block_number', '=', '1')
      .orderBy('seq')
      .execute()
    const free = events.filter((e) => e.webhook_id === 'wh_free')
    const ent = events.filter((e) => e.webhook_id === 'wh_ent')
    expect(free).toHaveLength(1001)
    expect(free.slice(0, 1000).every((e) => e.status === 'pending')).toBe(true)
    expect(free[1000]?.status).toBe('over_quota')
    expect(free[1000]?.last_error).toMatch(
      /^over_quota: the account's free plan includes 1000 webhook deliveries per UTC day and 2026-03-01's/,
    )
    // Enterprise: unlimited.
    expect(ent.every((e) => e.status === 'pending')).toBe(true)

    // In the delivery history: attempt 0, nothing sent.
    const history = await store.attempts(storage.db, 'wh_free', 100, 0)
    expect(history.rows.map((r) => [r.event_id, r.attempt, r.status_code])).toEqual([
      [free[1000]?.id, 0, null],
    ])
    expect(history.rows[0]?.error).toMatch(/^over_quota: /)

    // Never sent: with everything else delivered, nothing of the free webhook is claimable.
    await storage.db
      .updateTable('webhook_events')
      .set({ status: 'delivered' })
      .where('status', '=', 'pending')
      .execute()
    expect(await store.claim(storage.db, 10, 25, 30_000, [])).toEqual([])

    // Same day, one more: over quota too.
    await onBlock(2, 1)
    expect(await statuses(2)).toEqual(['wh_ent:pending', 'wh_free:over_quota'])

    // The next UTC day, delivery resumes.
    now = new Date('2026-03-02T00:00:01Z')
    await onBlock(3, 1)
    expect(await statuses(3)).toEqual(['wh_ent:pending', 'wh_free:pending'])
    const usage = await storage.db.selectFrom('webhook_quota_usage').selectAll().orderBy('day').execute()
    expect(usage.map((u) => [u.account_id, Number(u.used)])).toEqual([
      ['acct_free', 1002],
      ['acct_free', 1],
    ])
  })
})
