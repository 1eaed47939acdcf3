import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeEachStorage, type TestStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { createLogger } from '../logger.ts'
import { encryptSecret } from './crypto.ts'
import { DeliveryWorker } from './delivery.ts'
import { UNDECRYPTABLE } from './sender.ts'
import * as store from './store.ts'

/**
 * A signing secret that no longer decrypts (HALYARD_SECRET_KEY changed) is an operator
 * problem, not the receiver's: each try is recorded with the reason and retried with backoff,
 * nothing is sent unsigned, and the webhook is never paused for it (nobody is e-mailed).
 */
describeEachStorage('undecryptable signing secret on $name', (backend) => {
  let storage: TestStorage
  let server: http.Server
  let received = 0
  let port = 0

  beforeAll(async () => {
    storage = await backend.open()
    server = http.createServer((_req, res) => {
      received++
      res.end('ok')
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    port = (server.address() as AddressInfo).port
  })
  afterAll(async () => {
    await storage?.close()
    await new Promise((r) => server?.close(r))
  })

  it('records each try with the reason, backs off, and neither sends nor pauses', async () => {
    await store.insertWebhook(
      storage.db,
      {
        id: 'wh_key',
        account_id: 'acct',
        notify_email: 'owner@example.com',
        url: `http://127.0.0.1:${port}/hook`,
        chain: 'ethereum-devnet',
        event_type: 'log',
        config: '{}',
        // Encrypted under a key this worker does not have.
        secret_enc: encryptSecret('whsec_test', randomBytes(32)),
        status: 'active',
      },
      [],
    )
    await store.insertEvents(storage.db, [
      {
        id: 'evt_key',
        webhook_id: 'wh_key',
        network: null,
        block_number: null,
        event_type: 'log',
        body: '{}',
      },
    ])
    let paused = 0
    let alarms = 0
    const worker = new DeliveryWorker({
      db: storage.db,
      secretKey: randomBytes(32),
      opts: {
        timeoutMs: 2_000,
        // Two short delays: the third try waits on the last one, past the pause threshold.
        scheduleMs: [50, 100],
        concurrency: 4,
        perHostCap: 4,
        perLane: 5,
        pollMs: 20,
        maxResponseBytes: 1024,
        allowLoopback: true,
        protocols: ['http:'],
        onUndecryptable: () => alarms++,
      },
      onPause: async () => {
        paused++
      },
      logger: createLogger('silent'),
    })
    worker.start()
    let attempts: Awaited<ReturnType<typeof store.attempts>>['rows']
    try {
      attempts = await until('four recorded tries', async () => {
        const { rows } = await store.attempts(storage.db, 'wh_key', 10, 0)
        return rows.length >= 4 && rows
      })
    } finally {
      await worker.stop()
    }
    for (const a of attempts) {
      expect(a.status_code).toBeNull()
      expect(a.error).toBe(`secret: ${UNDECRYPTABLE}`)
    }
    const event = await store.event(storage.db, 'wh_key', 'evt_key')
    expect(event?.status).toBe('pending')
    expect(event?.round_attempts).toBe(0)
    expect(event?.attempts).toBeGreaterThanOrEqual(4)
    expect((await store.getById(storage.db, 'wh_key'))?.status).toBe('active')
    expect(paused).toBe(0)
    expect(received).toBe(0)
    // The operator hears of it: every try ticks the metric, and GET /ready's check fails.
    expect(alarms).toBeGreaterThanOrEqual(4)
    expect(await store.undecryptableBacklog(storage.db)).toBe(1)
  })
})
