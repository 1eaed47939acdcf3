import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  ackedIds as acked,
  type CrashWorker,
  sprayed,
  startWorker,
} from '../../test/fixtures/webhooks/crash-harness.ts'
import { Receiver } from '../../test/fixtures/webhooks/receiver.ts'
import { describeEach, type ServiceCase } from '../../test/helpers/services.ts'
import { until } from '../../test/helpers/until.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { Devnet } from '../devnet/demo.ts'
import { openStorage, type Storage } from '../storage/database.ts'

/**
 * kill -9 while 1,000 events are pending: a Halyard child process matches 1,000 token
 * transfers for 10 webhooks and starts delivering; it is SIGKILLed mid-way, a second process
 * starts on the same database, and every event still reaches the receiver at least once
 * (the ones in flight at the kill come back when their lease expires), duplicates carrying
 * the same event id and body.
 */
const EVENTS = 1000
const WEBHOOKS = 10

interface Target extends ServiceCase {
  env: Record<string, string>
  open(): Promise<Storage>
  cleanup(): Promise<void>
}

function targets(): Target[] {
  const list: Target[] = [
    {
      name: 'pglite',
      env: { WORKER_PGLITE_DIR: mkdtempSync(path.join(tmpdir(), 'halyard-whcrash-db-')) },
      open() {
        return openStorage({ dataDir: this.env.WORKER_PGLITE_DIR })
      },
      cleanup: async () => {},
    },
  ]
  // Reported skipped (describeEach) without DATABASE_URL: nothing below runs then.
  const url = process.env.DATABASE_URL ?? ''
  const schema = `t_${randomBytes(6).toString('hex')}`
  list.push({
    name: 'postgres',
    needs: ['DATABASE_URL'],
    env: { WORKER_DATABASE_URL: url, WORKER_SCHEMA: schema },
    open: () => openStorage({ databaseUrl: url, schema, poolSize: 2 }),
    cleanup: async () => {
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      await c.query(`drop schema if exists ${schema} cascade`)
      await c.end()
    },
  })
  return list
}

describeEach(targets(), 'webhook delivery killed with SIGKILL on $name', (target) => {
  let anvil: AnvilProcess
  let receiver: Receiver
  const secretKey = randomBytes(32).toString('hex')
  const workers: CrashWorker[] = []

  beforeAll(async () => {
    anvil = await startAnvil({ extraArgs: ['--gas-limit', '300000000'] })
    receiver = await new Receiver('127.0.0.1').start()
    // Slow enough that the kill lands with most events still pending.
    receiver.delayMs = 20
  })
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL')
    await receiver?.stop()
    await anvil?.stop()
    await target.cleanup()
  })

  it('delivers every one of 1,000 pending events at least once after a restart, ids stable', {
    timeout: 180_000,
  }, async () => {
    const env = { ANVIL_URL: anvil.url, WORKER_SECRET_KEY: secretKey, ...target.env }
    const first = startWorker(env)
    workers.push(first)
    await until('first worker ready', () => first.ready() !== undefined, 60_000)
    const { baseUrl, key } = first.ready() as { baseUrl: string; key: string }

    const dev = new Devnet(anvil.url)
    const token = await dev.deploy('DemoERC20', ['Crash', 'CRSH', 18])
    const holders = sprayed(7n, EVENTS)
    for (let w = 0; w < WEBHOOKS; w++) {
      const per = EVENTS / WEBHOOKS
      const res = await fetch(`${baseUrl}/webhooks`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({
          url: `http://127.0.0.1:${receiver.port}/wh/c${w}`,
          chain: 'ethereum-devnet',
          event_type: 'token_transfer',
          config: { contracts: [token], addresses: holders.slice(w * per, (w + 1) * per) },
        }),
      })
      expect(res.status).toBe(201)
    }
    await dev.send('DemoERC20', token, 'spray', [7n, BigInt(EVENTS), 1n], { gas: 150_000_000n })

    const ackedIds = () => acked(receiver)
    await until('deliveries under way', () => ackedIds().size >= 100, 60_000)
    first.child.kill('SIGKILL')
    await first.exited
    const atKill = ackedIds().size
    expect(atKill).toBeLessThan(EVENTS)

    const second = startWorker(env)
    workers.push(second)
    try {
      await until('every event delivered', () => ackedIds().size >= EVENTS, 90_000)
    } finally {
      second.child.kill('SIGTERM')
      await second.exited
    }

    const storage = await target.open()
    try {
      const rows = await storage.db.selectFrom('webhook_events').select(['id', 'status', 'body']).execute()
      expect(rows).toHaveLength(EVENTS)
      expect(rows.every((r) => r.status === 'delivered')).toBe(true)
      const stored = new Map(rows.map((r) => [r.id, r.body]))
      expect([...ackedIds()].sort()).toEqual([...stored.keys()].sort())
      // A duplicate (sent before the kill, sent again after) is byte-for-byte the same event.
      for (const r of receiver.received) expect(r.raw).toBe(stored.get(JSON.parse(r.raw).id))
    } finally {
      await storage.close()
    }
  })
})
