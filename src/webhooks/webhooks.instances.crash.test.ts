import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import {
  ackedIds as acked,
  type CrashWorker,
  sprayed,
  startWorker,
} from '../../test/fixtures/webhooks/crash-harness.ts'
import { Receiver } from '../../test/fixtures/webhooks/receiver.ts'
import { describeNeeding } from '../../test/helpers/services.ts'
import { until } from '../../test/helpers/until.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { Devnet } from '../devnet/demo.ts'
import { openStorage, type Storage } from '../storage/database.ts'

/**
 * Two Halyard processes on one PostgreSQL schema, both delivering: `alpha`
 * (started first, so it indexes and matches) and `beta`. 1,000 token transfers for 10 webhooks
 * go out; once `alpha` has recorded some attempts it is SIGKILLed mid-delivery, and `beta`
 * delivers the rest (its leases expired), so the attempts name both instances and every event
 * reaches the receiver at least once, duplicates byte-for-byte the same.
 */
const EVENTS = 1000
const WEBHOOKS = 10

describeNeeding(['DATABASE_URL'], 'webhook delivery from two processes, one killed with SIGKILL', () => {
  const url = process.env.DATABASE_URL ?? ''
  const schema = `t_${randomBytes(6).toString('hex')}`
  const secretKey = randomBytes(32).toString('hex')
  let anvil: AnvilProcess
  let receiver: Receiver
  let storage: Storage
  const workers: CrashWorker[] = []

  beforeAll(async () => {
    anvil = await startAnvil({ extraArgs: ['--gas-limit', '300000000'] })
    receiver = await new Receiver('127.0.0.1').start()
    // Slow enough that the kill lands with most events still to send.
    receiver.delayMs = 20
  })
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL')
    await storage?.close()
    await receiver?.stop()
    await anvil?.stop()
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    await c.query(`drop schema if exists ${schema} cascade`)
    await c.end()
  })

  it('both deliver, the attempts name each, and nothing is lost when one is killed', {
    timeout: 180_000,
  }, async () => {
    const env = {
      ANVIL_URL: anvil.url,
      WORKER_SECRET_KEY: secretKey,
      WORKER_DATABASE_URL: url,
      WORKER_SCHEMA: schema,
    }
    const alpha = startWorker({ ...env, WORKER_INSTANCE_ID: 'alpha' })
    workers.push(alpha)
    await until('alpha ready', () => alpha.ready() !== undefined, 60_000)
    const beta = startWorker({ ...env, WORKER_INSTANCE_ID: 'beta' })
    workers.push(beta)
    await until('beta ready', () => beta.ready() !== undefined, 60_000)
    storage = await openStorage({ databaseUrl: url, schema, poolSize: 2 })
    const { baseUrl, key } = alpha.ready() as { baseUrl: string; key: string }

    const dev = new Devnet(anvil.url)
    const token = await dev.deploy('DemoERC20', ['Two', 'TWO', 18])
    const holders = sprayed(11n, EVENTS)
    for (let w = 0; w < WEBHOOKS; w++) {
      const per = EVENTS / WEBHOOKS
      const res = await fetch(`${baseUrl}/webhooks`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({
          url: `http://127.0.0.1:${receiver.port}/wh/i${w}`,
          chain: 'ethereum-devnet',
          event_type: 'token_transfer',
          config: { contracts: [token], addresses: holders.slice(w * per, (w + 1) * per) },
        }),
      })
      expect(res.status).toBe(201)
    }
    await dev.send('DemoERC20', token, 'spray', [11n, BigInt(EVENTS), 1n], { gas: 150_000_000n })

    const attemptsBy = async (instance: string) =>
      Number(
        (
          await storage.db
            .selectFrom('webhook_attempts')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .where('instance', '=', instance)
            .executeTakeFirstOrThrow()
        ).n,
      )
    const ackedIds = () => acked(receiver)
    await until('alpha has recorded deliveries', async () => (await attemptsBy('alpha')) >= 50, 60_000)
    alpha.child.kill('SIGKILL')
    await alpha.exited
    expect(ackedIds().size).toBeLessThan(EVENTS)

    await until('every event delivered', () => ackedIds().size >= EVENTS, 90_000)
    await until(
      'every event recorded delivered',
      async () =>
        (
          await storage.db
            .selectFrom('webhook_events')
            .select('id')
            .where('status', '<>', 'delivered')
            .execute()
        ).length === 0,
      30_000,
    )
    beta.child.kill('SIGTERM')
    await beta.exited

    const rows = await storage.db.selectFrom('webhook_events').select(['id', 'body']).execute()
    expect(rows).toHaveLength(EVENTS)
    const stored = new Map(rows.map((r) => [r.id, r.body]))
    expect([...ackedIds()].sort()).toEqual([...stored.keys()].sort())
    for (const r of receiver.received) expect(r.raw).toBe(stored.get(JSON.parse(r.raw).id))
    expect(await attemptsBy('alpha')).toBeGreaterThan(0)
    expect(await attemptsBy('beta')).toBeGreaterThan(0)
  })
})
