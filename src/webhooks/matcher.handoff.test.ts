import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { nativeTransfersBlock } from '../../test/fixtures/webhooks/test-blocks.ts'
import { describeEachStorage, POSTGRES_ONLY, type TestStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { NetworkRegistry } from '../chains/registry.ts'
import { createLogger } from '../logger.ts'
import type { Address } from '../types.ts'
import { matchKeys } from './config.ts'
import { encryptSecret } from './crypto.ts'
import { DeliveryWorker } from './delivery.ts'
import { WebhookMatcher } from './matcher.ts'
import { ReceiptReader } from './receipts.ts'
import * as store from './store.ts'
import { TokenMetadata } from './token-metadata.ts'

/**
 * Events the matcher leases to this process's worker at insert are handed over only when
 * their own transaction commits. Each network's indexer runs its own transactions, at the same
 * time on PostgreSQL (PGlite's single connection cannot hold two open): a commit on one network
 * must hand over that network's events, never those of another network's transaction that is
 * still open, or that rolls back.
 */
const TO = '0x00000000000000000000000000000000000000a1' as Address
const block = (network: string, n: number) => nativeTransfersBlock(network, n, [TO])

describeEachStorage(
  'matcher hand-off across networks on $name',
  (backend) => {
    let storage: TestStorage
    let server: http.Server
    const received: string[] = []
    const key = randomBytes(32)

    beforeAll(async () => {
      storage = await backend.open()
      server = http.createServer((req, res) => {
        const chunks: Buffer[] = []
        req.on('data', (c) => chunks.push(c))
        req.on('end', () => {
          received.push((JSON.parse(Buffer.concat(chunks).toString()) as { webhook_id: string }).webhook_id)
          res.end('ok')
        })
      })
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    })
    afterAll(async () => {
      await storage?.close()
      await new Promise((r) => server?.close(r))
    })

    it("a commit hands over its own network's leased events only", async () => {
      const port = (server.address() as AddressInfo).port
      for (const net of ['net-a', 'net-b']) {
        const config = { addresses: [TO] }
        await store.insertWebhook(
          storage.db,
          {
            id: `wh_${net}`,
            account_id: 'acct',
            notify_email: null,
            url: `http://127.0.0.1:${port}/${net}`,
            chain: net,
            event_type: 'address_activity',
            config: JSON.stringify(config),
            secret_enc: encryptSecret('whsec_test', key),
            status: 'active',
          },
          matchKeys('address_activity', config),
        )
      }
      const networks = new NetworkRegistry([])
      const matcher = new WebhookMatcher({
        db: storage.db,
        tokens: new TokenMetadata(networks),
        receipts: new ReceiptReader(networks),
        nativeSymbol: () => 'ETH',
        logger: createLogger('silent'),
      })
      // The lease (2 × timeout + 2 s) outlasts the wait below: only the hand-off can send.
      const worker = new DeliveryWorker({
        db: storage.db,
        secretKey: key,
        opts: {
          timeoutMs: 30_000,
          scheduleMs: [60_000],
          concurrency: 4,
          perHostCap: 4,
          perLane: 5,
          pollMs: 20,
          maxResponseBytes: 1024,
          allowLoopback: true,
          protocols: ['http:'],
        },
        onPause: async () => {},
        logger: createLogger('silent'),
      })
      matcher.handoff = worker
      worker.start()
      const signal = () => {
        let fire = () => {}
        const fired = new Promise<void>((r) => {
          fire = r
        })
        return { fire, fired }
      }
      const aInserted = signal()
      const bInserted = signal()
      const aCommitted = signal()
      try {
        const a = storage.db.transaction().execute(async (trx) => {
          await matcher.onBlock(trx, block('net-a', 1))
          aInserted.fire()
          await bInserted.fired
        })
        const b = storage.db.transaction().execute(async (trx) => {
          await aInserted.fired
          await matcher.onBlock(trx, block('net-b', 1))
          bInserted.fire()
          await aCommitted.fired
          throw new Error('network B rolls back')
        })
        await a
        // What the indexer does right after its commit.
        matcher.afterCommit('net-a', 1n)
        aCommitted.fire()
        await expect(b).rejects.toThrow('network B rolls back')
        await until('network A delivered', () => received.includes('wh_net-a'), 10_000)
      } finally {
        await worker.stop()
      }
      expect(received).toEqual(['wh_net-a'])
      const rows = await storage.db.selectFrom('webhook_events').select(['webhook_id', 'status']).execute()
      expect(rows).toEqual([{ webhook_id: 'wh_net-a', status: 'delivered' }])
    })
  },
  POSTGRES_ONLY,
)
