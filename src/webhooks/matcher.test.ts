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
 * The matcher keeps parsed webhook configs between blocks, keyed by the row version the match
 * lookup returns: a PATCHed config must be used from the next block on, whether the block is
 * matched inside the indexer's transaction or ahead of it (prepare).
 */
const NET = 'ethereum-devnet'
const A = '0x00000000000000000000000000000000000000a1' as Address
const B = '0x00000000000000000000000000000000000000b2' as Address
const block = (n: number, to: Address[]) => nativeTransfersBlock(NET, n, to)

describeEachStorage('webhook matcher on $name', (backend) => {
  let storage: TestStorage
  let matcher: WebhookMatcher

  const eventsOf = async (n: number) =>
    (
      await storage.db
        .selectFrom('webhook_events')
        .select('body')
        .where('block_number', '=', String(n))
        .orderBy('seq')
        .execute()
    ).map((r) => (JSON.parse(r.body) as { data: { to: string } }).data.to)

  beforeAll(async () => {
    storage = await backend.open()
    const networks = new NetworkRegistry([])
    matcher = new WebhookMatcher({
      db: storage.db,
      tokens: new TokenMetadata(networks),
      receipts: new ReceiptReader(networks),
      nativeSymbol: () => 'ETH',
      logger: createLogger('silent'),
    })
    const config = { addresses: [A] }
    await store.insertWebhook(
      storage.db,
      {
        id: 'wh_m',
        account_id: 'acct',
        notify_email: null,
        url: 'https://example.com/',
        chain: NET,
        event_type: 'address_activity',
        config: JSON.stringify(config),
        secret_enc: 'x',
        status: 'active',
      },
      matchKeys('address_activity', config),
    )
  })
  afterAll(async () => {
    await storage?.close()
  })

  it('uses a changed config from the next block on, in the transaction and ahead of it', async () => {
    await storage.db.transaction().execute((trx) => matcher.onBlock(trx, block(1, [A, B])))
    expect(await eventsOf(1)).toEqual([A])

    const config = { addresses: [B] }
    await store.update(
      storage.db,
      'wh_m',
      { config: JSON.stringify(config) },
      matchKeys('address_activity', config),
    )
    await storage.db.transaction().execute((trx) => matcher.onBlock(trx, block(2, [A, B])))
    expect(await eventsOf(2)).toEqual([B])

    const both = { addresses: [A, B] }
    await store.update(
      storage.db,
      'wh_m',
      { config: JSON.stringify(both) },
      matchKeys('address_activity', both),
    )
    const b3 = block(3, [A, B])
    // PGlite has one connection, which the transaction would hold: prepare first, as the
    // indexer does on PostgreSQL.
    await matcher.prepare(b3)
    await storage.db.transaction().execute((trx) => matcher.onBlock(trx, b3))
    expect(await eventsOf(3)).toEqual([A, B])
  })

  it('a reverted transaction moved no value: no address_activity event for it', async () => {
    // The config watches A and B since the test above; the indexer flags A's transaction reverted.
    const b4 = block(4, [A, B])
    const [toA] = b4.transactions ?? []
    if (toA) toA.reverted = true
    await matcher.prepare(b4)
    await storage.db.transaction().execute((trx) => matcher.onBlock(trx, b4))
    expect(await eventsOf(4)).toEqual([B])
  })
})
