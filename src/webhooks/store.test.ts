import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeEachStorage, type TestStorage } from '../../test/helpers/storage.ts'
import { createLogger } from '../logger.ts'
import { OutcomeWriter } from './outcome-writer.ts'
import type { ClaimedEvent } from './store.ts'
import * as store from './store.ts'

/**
 * The claim query is what makes several workers (or instances) safe: claims racing on the same
 * database never hand out the same event, only a webhook's oldest undelivered events are
 * handed out (block order), and nothing behind an event in flight is claimable.
 */
/** A webhook row as the store inserts it; tests override what they are about. */
const webhook = (id: string, over: Partial<Parameters<typeof store.insertWebhook>[1]> = {}) => ({
  id,
  account_id: 'acct',
  notify_email: null,
  url: 'https://example.com/',
  chain: 'ethereum-devnet',
  event_type: 'log',
  config: '{}',
  secret_enc: 'x',
  status: 'active',
  ...over,
})

describeEachStorage('webhook claims on $name', (backend) => {
  let storage: TestStorage

  beforeAll(async () => {
    storage = await backend.open()
    for (let w = 0; w < 20; w++) {
      await store.insertWebhook(storage.db, webhook(`wh_${w}`), [])
    }
    const events = Array.from({ length: 400 }, (_, i) => ({
      id: `evt_${String(i).padStart(4, '0')}`,
      webhook_id: `wh_${i % 20}`,
      network: 'ethereum-devnet',
      block_number: String(Math.floor(i / 20)),
      event_type: 'log',
      body: '{}',
    }))
    await store.insertEvents(storage.db, events)
  })
  afterAll(async () => {
    await storage?.close()
  })

  it('concurrent claims are disjoint, per webhook in order, and block what is behind them', async () => {
    const claims = await Promise.all(
      Array.from({ length: 4 }, () => store.claim(storage.db, 10, 5, 60_000, [])),
    )
    const all = claims.flat()
    const ids = all.map((e) => e.id)
    expect(new Set(ids).size).toBe(ids.length)
    // Each webhook appears in one claim only, with its oldest events in order.
    const byWebhook = new Map<string, ClaimedEvent[]>()
    for (const c of claims) {
      const seen = new Set(c.map((e) => e.webhook_id))
      for (const w of seen) {
        expect(byWebhook.has(w)).toBe(false)
        byWebhook.set(
          w,
          c.filter((e) => e.webhook_id === w),
        )
      }
    }
    expect(byWebhook.size).toBe(20)
    for (const [w, lane] of byWebhook) {
      const n = Number(w.slice(3))
      expect(lane.map((e) => e.id)).toEqual(
        [0, 1, 2, 3, 4].map((k) => `evt_${String(k * 20 + n).padStart(4, '0')}`),
      )
    }
    // Everything left sits behind an event in flight: nothing is claimable until the leases go.
    expect(await store.claim(storage.db, 100, 5, 60_000, [])).toEqual([])
    // Giving a lane back makes its webhook claimable again, from its oldest event.
    const lane0 = byWebhook.get('wh_0') as ClaimedEvent[]
    await store.release(
      storage.db,
      lane0.map((e) => e.seq),
    )
    const again = await store.claim(storage.db, 100, 2, 60_000, [])
    expect(again.map((e) => e.id)).toEqual(['evt_0000', 'evt_0020'])
  })

  it('updating a webhook that is gone answers undefined (the route says 404), not an error', async () => {
    expect(await store.update(storage.db, 'wh_missing', { status: 'paused' })).toBeUndefined()
    expect((await store.update(storage.db, 'wh_19', { status: 'paused' }))?.status).toBe('paused')
  })

  it('a redelivery request leaves an event in flight with its worker (no second claim)', async () => {
    await store.insertWebhook(storage.db, webhook('wh_r'), [])
    await store.insertEvents(storage.db, [
      { id: 'evt_r', webhook_id: 'wh_r', network: null, block_number: null, event_type: 'log', body: '{}' },
    ])
    const first = await store.claim(storage.db, 100, 1, 60_000, [])
    expect(first.filter((e) => e.webhook_id === 'wh_r').map((e) => e.id)).toEqual(['evt_r'])
    await store.requeue(storage.db, 'wh_r', 'evt_r')
    expect((await store.event(storage.db, 'wh_r', 'evt_r'))?.status).toBe('sending')
    const second = await store.claim(storage.db, 100, 1, 60_000, [])
    expect(second.filter((e) => e.webhook_id === 'wh_r')).toEqual([])
  })

  it('leases events at insert only to active webhooks with nothing undelivered, in order', async () => {
    const hook = (id: string, status: string) =>
      store.insertWebhook(
        storage.db,
        webhook(id, { url: `https://example.com/${id}`, secret_enc: `enc_${id}`, status }),
        [],
      )
    await hook('wh_idle', 'active')
    await hook('wh_busy', 'active')
    await hook('wh_paused', 'paused')
    const ev = (id: string, webhook_id: string) => ({
      id,
      webhook_id,
      network: 'ethereum-devnet',
      block_number: '7',
      event_type: 'log',
      body: `{"id":"${id}"}`,
    })
    await store.insertEvents(storage.db, [ev('evt_busy0', 'wh_busy')])
    const leased = await store.insertEvents(
      storage.db,
      [
        ev('evt_idle1', 'wh_idle'),
        ev('evt_busy1', 'wh_busy'),
        ev('evt_idle2', 'wh_idle'),
        ev('evt_paused1', 'wh_paused'),
        ev('evt_idle3', 'wh_idle'),
      ],
      // evt_idle3 is past the lane size the caller chose: not flagged.
      { flags: [true, true, true, true, false], leaseMs: 60_000 },
    )
    expect(leased.map((e) => [e.id, e.url, e.secret_enc, e.body, e.attempts])).toEqual([
      ['evt_idle1', 'https://example.com/wh_idle', 'enc_wh_idle', '{"id":"evt_idle1"}', 0],
      ['evt_idle2', 'https://example.com/wh_idle', 'enc_wh_idle', '{"id":"evt_idle2"}', 0],
    ])
    const status = async (id: string) =>
      await store.event(storage.db, id.replace('evt', 'wh').replace(/\d+$/, ''), id)
    expect((await status('evt_idle1'))?.status).toBe('sending')
    expect((await status('evt_idle1'))?.lease_until).not.toBeNull()
    for (const id of ['evt_idle3', 'evt_busy1', 'evt_paused1'])
      expect([id, (await status(id))?.status]).toEqual([id, 'pending'])
    // A claim leaves the leased lane and what waits behind it alone; the busy webhook's oldest
    // event goes first.
    const claimed = (await store.claim(storage.db, 100, 5, 60_000, [])).filter((e) =>
      ['wh_idle', 'wh_busy', 'wh_paused'].includes(e.webhook_id),
    )
    expect(claimed.map((e) => e.id)).toEqual(['evt_busy0', 'evt_busy1'])
  })

  it('says whether an active webhook of a network reads block transactions', async () => {
    // Only `log` webhooks so far (and paused ones): blocks with logs are enough.
    expect(await store.watchesTransactions(storage.db, 'ethereum-devnet')).toBe(false)
    await store.insertWebhook(
      storage.db,
      webhook('wh_tx', { event_type: 'mined_transaction', status: 'paused' }),
      [],
    )
    expect(await store.watchesTransactions(storage.db, 'ethereum-devnet')).toBe(false)
    await store.update(storage.db, 'wh_tx', { status: 'active' })
    expect(await store.watchesTransactions(storage.db, 'ethereum-devnet')).toBe(true)
    expect(await store.watchesTransactions(storage.db, 'base-devnet')).toBe(false)
  })
})

describeEachStorage('webhook attempt records on $name', (backend) => {
  let storage: TestStorage
  beforeAll(async () => {
    storage = await backend.open()
  })
  afterAll(async () => {
    await storage?.close()
  })

  // A batch PostgreSQL refuses would never be written: its delivered events would stay
  // `sending` and go out again at every lease expiry.
  it('records an outcome whose error text holds a NUL byte, with the rest of its batch', async () => {
    await store.insertWebhook(storage.db, webhook('wh_nul'), [])
    await store.insertEvents(storage.db, [
      {
        id: 'evt_n1',
        webhook_id: 'wh_nul',
        network: null,
        block_number: null,
        event_type: 'log',
        body: '{}',
      },
      {
        id: 'evt_n2',
        webhook_id: 'wh_nul',
        network: null,
        block_number: null,
        event_type: 'log',
        body: '{}',
      },
    ])
    const claimed = await store.claim(storage.db, 10, 10, 60_000, [])
    const [a, b] = claimed
    expect(claimed.map((e) => e.id)).toEqual(['evt_n1', 'evt_n2'])
    await store.recordOutcomes(
      storage.db,
      [
        { ev: a as ClaimedEvent, statusCode: 200, error: null, durationMs: 1, next: 'delivered' },
        {
          ev: b as ClaimedEvent,
          statusCode: null,
          error: 'connect: bad\u0000peer',
          durationMs: 1,
          next: 'pending',
          retryAt: new Date(),
        },
      ],
      'test-instance',
    )
    expect((await store.event(storage.db, 'wh_nul', 'evt_n1'))?.status).toBe('delivered')
    expect((await store.event(storage.db, 'wh_nul', 'evt_n2'))?.last_error).toBe('connect: bad\ufffdpeer')
    const { rows } = await store.attempts(storage.db, 'wh_nul', 10, 0)
    expect(rows.map((r) => [r.event_id, r.instance])).toEqual([
      ['evt_n1', 'test-instance'],
      ['evt_n2', 'test-instance'],
    ])
  })
})

describeEachStorage('webhook outcome writer on $name', (backend) => {
  let storage: TestStorage
  beforeAll(async () => {
    storage = await backend.open()
  })
  afterAll(async () => {
    await storage?.close()
  })

  /** One webhook `wh_<id>` with one event `evt_<id>` per id, the events claimed for sending. */
  async function claimedEvents(ids: readonly string[]) {
    for (const w of ids) await store.insertWebhook(storage.db, webhook(`wh_${w}`), [])
    await store.insertEvents(
      storage.db,
      ids.map((w) => ({
        id: `evt_${w}`,
        webhook_id: `wh_${w}`,
        network: null,
        block_number: null,
        event_type: 'log',
        body: '{}',
      })),
    )
    const mine = new Set(ids.map((w) => `evt_${w}`))
    const claimed = (await store.claim(storage.db, 10, 1, 60_000, [])).filter((e) => mine.has(e.id))
    expect(claimed).toHaveLength(ids.length)
    return claimed
  }

  it('writes the rest of a batch PostgreSQL refuses one outcome of, and gives that one up', async () => {
    const claimed = await claimedEvents(['w1', 'w2', 'w3'])
    const writer = new OutcomeWriter({
      db: storage.db,
      instance: 'w',
      logger: createLogger('silent'),
      afterRecorded: async () => {},
      stopping: () => false,
    })
    const done: string[] = []
    for (const ev of claimed) {
      // duration_ms is an integer column: 2^40 is out of its range (SQLSTATE 22003).
      const durationMs = ev.id === 'evt_w2' ? 2 ** 40 : 1
      writer.record({ ev, statusCode: 200, error: null, durationMs, next: 'delivered' }, () =>
        done.push(ev.id),
      )
    }
    await writer.drain()
    expect(done.sort()).toEqual(['evt_w1', 'evt_w2', 'evt_w3'])
    const status = async (w: string) => (await store.event(storage.db, `wh_${w}`, `evt_${w}`))?.status
    expect(await status('w1')).toBe('delivered')
    expect(await status('w3')).toBe('delivered')
    // Not recorded: still leased, so it is sent again once the lease runs out.
    expect(await status('w2')).toBe('sending')
  })

  it('goes back to batches once the refused batch is sorted out', async () => {
    const ids = ['b1', 'b2', 'b3', 'b4', 'b5', 'b6']
    const claimed = await claimedEvents(ids)
    const sizes: number[] = []
    const logger = createLogger('debug', {
      write: (line: string) => {
        const o = JSON.parse(line) as { msg?: string; outcomes?: number }
        if (o.msg === 'webhook outcomes recorded' && o.outcomes !== undefined) sizes.push(o.outcomes)
      },
    })
    const outcome = (ev: ClaimedEvent) => ({
      ev,
      statusCode: 200,
      error: null,
      // duration_ms is an integer column: 2^40 is out of its range (SQLSTATE 22003).
      durationMs: ev.id === 'evt_b3' ? 2 ** 40 : 1,
      next: 'delivered' as const,
    })
    const later = claimed.slice(3)
    const done: string[] = []
    const writer: OutcomeWriter = new OutcomeWriter({
      db: storage.db,
      instance: 'w',
      logger,
      afterRecorded: async (o) => {
        // Outcomes that arrive while the refused batch is written one by one.
        if (o.ev.id === 'evt_b2') for (const ev of later) writer.record(outcome(ev), () => done.push(ev.id))
      },
      stopping: () => false,
    })
    for (const ev of claimed.slice(0, 3)) writer.record(outcome(ev), () => done.push(ev.id))
    await writer.drain()
    expect(done.sort()).toEqual(ids.map((w) => `evt_${w}`))
    // b1 flushes alone (the loop starts at the first record); [b2, b3] is refused, so b2 goes
    // alone and b3 is refused alone; b4..b6, which came meanwhile, go together again.
    expect(sizes).toEqual([1, 1, 3])
  })
})
