import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { Receiver } from '../../test/fixtures/webhooks/receiver.ts'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { serviceUrl } from '../../test/helpers/services.ts'
import { describeEachStorage, POSTGRES_ONLY, type TestStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { openStorage, type Storage } from '../storage/database.ts'
import type { Address, Hash } from '../types.ts'

/**
 * Two Halyard instances on one PostgreSQL schema, each with its own connection pool (nothing
 * shared in memory): `api` serves the API and indexes but delivers nothing
 * (HALYARD_WEBHOOK_DELIVERY=off); `courier` delivers, with its poll interval set to 60 s. So
 * every event, test event and redelivery asked on `api` that reaches the receiver within the
 * waits below (30 s) was sent because `api`'s NOTIFY woke `courier`: nothing else would have
 * made it claim before its next poll. The attempt rows name `courier`.
 * (Both instances delivering and kill -9 of one: webhooks.instances.crash.test.ts.)
 */
const WATCHED = '0x00000000000000000000000000000000000c0ffe' as Address
const WAIT_MS = 30_000

describeEachStorage(
  'webhook delivery woken across instances on $name',
  (backend) => {
    let anvil: AnvilProcess
    let storage: TestStorage
    let second: Storage
    let api: TestHalyard
    let courier: TestHalyard
    let receiver: Receiver
    let key: string
    let dev: Devnet

    const call = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(`${api.baseUrl}${p}`, {
        method,
        headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      return { status: res.status, body: (await res.json()) as Record<string, unknown> }
    }
    const deliveries = async (id: string) =>
      (await call('GET', `/webhooks/${id}/deliveries?limit=100`)).body.deliveries as Array<{
        event_id: string
        status_code: number | null
      }>
    const received = (id: string) => receiver.received.filter((r) => JSON.parse(r.raw).id === id)

    beforeAll(async () => {
      anvil = await startAnvil()
      dev = new Devnet(anvil.url)
      receiver = await new Receiver('127.0.0.1').start()
      storage = await backend.open()
      const url = serviceUrl('DATABASE_URL')
      second = await openStorage({ databaseUrl: url, schema: storage.schema, poolSize: 3 })
      const network = anvilNetwork(anvil)
      // One HALYARD_SECRET_KEY for both, as in any deployment: either decrypts the signing secrets.
      const secretKey = randomBytes(32)
      // Started first, so it holds the indexer's lock: the events are matched here, where
      // nothing delivers.
      api = await startTestHalyard({
        networks: [network],
        storage,
        devMode: true,
        env: { DATABASE_URL: url, HALYARD_INSTANCE_ID: 'api', HALYARD_WEBHOOK_DELIVERY: 'off' },
        extra: { secretKey },
      })
      courier = await startTestHalyard({
        networks: [network],
        storage: second,
        devMode: true,
        env: { DATABASE_URL: url, HALYARD_INSTANCE_ID: 'courier', HALYARD_WEBHOOK_POLL_INTERVAL: '60s' },
        extra: { secretKey },
      })
      key = await api.createKey()
    }, 120_000)
    afterAll(async () => {
      await courier?.close()
      await api?.close()
      await second?.close()
      await storage?.close()
      await receiver?.stop()
      await anvil?.stop()
    })

    it('an event matched on one instance, its test event and a redelivery asked there are sent by the other at once', async () => {
      const created = await call('POST', '/webhooks', {
        url: `http://127.0.0.1:${receiver.port}/wh/x`,
        chain: 'ethereum-devnet',
        event_type: 'address_activity',
        config: { addresses: [WATCHED] },
      })
      expect(created.status).toBe(201)
      const id = created.body.id as string

      // A block event, matched by `api`'s indexer.
      const hash = await dev.rpc<Hash>('eth_sendTransaction', [
        { from: DEV_ACCOUNT, to: WATCHED, value: '0x1' },
      ])
      const first = await until(
        'the block event at the receiver',
        () => receiver.received.find((r) => r.raw.includes(hash)),
        WAIT_MS,
      )
      const eventId = JSON.parse(first.raw).id as string

      // A test event asked on `api`.
      const test = await call('POST', `/webhooks/${id}/test`)
      expect(test.status).toBe(200)
      await until(
        'the test event at the receiver',
        () => received(test.body.id as string).length === 1,
        WAIT_MS,
      )

      // A redelivery asked on `api`, once the first delivery is recorded (delivered).
      await until(
        'the first delivery recorded',
        async () => (await deliveries(id)).some((d) => d.event_id === eventId),
        WAIT_MS,
      )
      const again = await call('POST', `/webhooks/${id}/deliveries/${eventId}/redeliver`)
      expect(again.status).toBe(200)
      await until('the redelivery at the receiver', () => received(eventId).length === 2, WAIT_MS)

      const history = await until(
        'three attempts recorded',
        async () => {
          const d = await deliveries(id)
          return d.length === 3 ? d : null
        },
        WAIT_MS,
      )
      expect(history.every((d) => d.status_code === 200)).toBe(true)
      // The instance is the operator's to know (the attempt rows), not the tenant's.
      const rows = await storage.db
        .selectFrom('webhook_attempts')
        .select('instance')
        .where('webhook_id', '=', id)
        .execute()
      expect(rows.map((r) => r.instance)).toEqual(['courier', 'courier', 'courier'])
      // Both instances' APIs read the same history.
      const viaCourier = await fetch(`${courier.baseUrl}/webhooks/${id}/deliveries`, {
        headers: { 'x-api-key': key },
      })
      expect(((await viaCourier.json()) as { total: number }).total).toBe(3)
    }, 120_000)

    it('an event queued behind one delivered but not yet recorded goes out once that is recorded, not at the next poll', async () => {
      const created = await call('POST', '/webhooks', {
        url: `http://127.0.0.1:${receiver.port}/wh/held`,
        chain: 'ethereum-devnet',
        event_type: 'address_activity',
        config: { addresses: [WATCHED] },
      })
      expect(created.status).toBe(201)
      const id = created.body.id as string
      // Holds `courier`'s outcome writes: its delivered event stays `sending`, its queue's head.
      const holder = new pg.Client({ connectionString: serviceUrl('DATABASE_URL') })
      await holder.connect()
      let second: string
      try {
        await holder.query(`set search_path to "${storage.schema}"`)
        await holder.query('begin')
        await holder.query('lock table webhook_attempts in exclusive mode')
        const first = await call('POST', `/webhooks/${id}/test`)
        await until(
          'the first event at the receiver',
          () => received(first.body.id as string).length === 1,
          WAIT_MS,
        )
        second = (await call('POST', `/webhooks/${id}/test`)).body.id as string
        // `courier` is woken for it and claims, but the first is still the head: order holds.
        await new Promise((r) => setTimeout(r, 1000))
        expect(received(second)).toHaveLength(0)
      } finally {
        await holder.query('rollback').catch(() => {})
        await holder.end()
      }
      // Recorded now; nothing else wakes `courier` (its poll is 60 s): the record itself must.
      await until('the second event at the receiver', () => received(second).length === 1, WAIT_MS)
    }, 120_000)
  },
  POSTGRES_ONLY,
)
