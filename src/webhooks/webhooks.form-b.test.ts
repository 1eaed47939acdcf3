import { createHmac, timingSafeEqual } from 'node:crypto'
import { expect, it } from 'vitest'
import type { Received } from '../../test/fixtures/webhooks/receiver.ts'
import {
  A,
  B,
  type CreatedWebhook,
  SCHEDULE_B_MS,
  webhooksFixture,
} from '../../test/fixtures/webhooks/webhooks-fixture.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { verifyWebhook } from './verify.ts'

/**
 * Delivery form B end to end on real parts (test/fixtures/webhooks/webhooks-fixture.ts: anvil, Halyard in
 * production mode, a real HTTPS receiver). The receiver's checks below are written here with
 * node:crypto, not with Halyard's verify.ts: a receiver written from docs/webhooks.md's description must accept it.
 * The 7-retry schedule is compressed (SCHEDULE_B_MS), as form A's is.
 */

/** What a receiver written from form B's description does: HMAC the raw body, compare in constant time. */
function verifiesB(rec: Received, secret: string): boolean {
  const header = rec.headers['x-service-signature']
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false
  const want = Buffer.from(createHmac('sha256', secret).update(rec.raw).digest('hex'))
  const got = Buffer.from(header.slice('sha256='.length))
  return got.length === want.length && timingSafeEqual(got, want)
}

describeEachStorage('webhooks: delivery form B on $name', (backend) => {
  const fx = webhooksFixture(backend)
  const { api, deliveries, sendEth } = fx

  const createB = async (name: string, event_type: string, config: unknown) => {
    const res = await api('POST', '/webhooks', {
      url: fx.urlFor(name),
      chain: 'ethereum-devnet',
      event_type,
      config,
      format: 'B',
    })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body.format).toBe('B')
    return res.body as CreatedWebhook
  }

  it('signs the raw body with sha256=, names the type and idempotency key, and sends the 6.2 envelope', async () => {
    const { dev, receiver, usd } = fx
    const tt = await createB('b-tt', 'token_transfer', { contracts: [usd] })
    const aa = await createB('b-aa', 'address_activity', { addresses: [B] })
    const tx = await dev.send('DemoERC20', usd, 'mint', [A, 1_500_000n])
    const native = await sendEth(B, 7n)
    await until(
      'form B deliveries',
      () => receiver.acked('b-tt').length >= 1 && receiver.acked('b-aa').length >= 1,
    )
    const receipt = await dev.client.getTransactionReceipt({ hash: tx })

    const [got] = receiver.acked('b-tt')
    if (!got) throw new Error('no delivery')
    expect(verifiesB(got, tt.signing_secret)).toBe(true)
    expect(verifiesB(got, aa.signing_secret)).toBe(false)
    expect(got.headers['content-type']).toBe('application/json')
    expect(got.headers['x-webhook-event']).toBe('TOKEN_TRANSFER')
    expect(got.headers['x-webhook-idempotency-key']).toBe(got.body.id)
    expect(got.headers['x-service-timestamp']).toBeUndefined()
    expect(Object.keys(got.body).sort()).toEqual(['chain', 'chainId', 'createdAt', 'data', 'id', 'type'])
    expect(got.body.id).toMatch(/^evt_[0-9a-f]{24}$/)
    expect(got.body.type).toBe('TOKEN_TRANSFER')
    expect(got.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect(got.body.chain).toBe('ethereum-devnet')
    expect(got.body.chainId).toBe(31337)
    expect(got.body.data).toEqual({
      blockNumber: Number(receipt.blockNumber),
      transactionHash: tx,
      logIndex: receipt.logs[0]?.logIndex,
      from: `0x${'0'.repeat(40)}`,
      to: A,
      token: { address: usd, symbol: 'DUSD', decimals: 6 },
      value: '1500000',
      valueFormatted: '1.5',
    })

    // Other kinds: form A's data in camelCase, the chain in the envelope only.
    const [act] = receiver.acked('b-aa')
    if (!act) throw new Error('no delivery')
    expect(verifiesB(act, aa.signing_secret)).toBe(true)
    expect(act.headers['x-webhook-event']).toBe('ADDRESS_ACTIVITY')
    expect(act.body.type).toBe('ADDRESS_ACTIVITY')
    expect(act.body.data).toMatchObject({
      transactionHash: native,
      to: B,
      value: '7',
      asset: 'ETH',
      contract: null,
      direction: 'incoming',
    })
    expect(Object.keys(act.body.data)).not.toContain('chain')
    expect(Object.keys(act.body.data)).toContain('blockNumber')

    // The test event goes out in the webhook's form too.
    const test = await api('POST', `/webhooks/${tt.id}/test`)
    await until('test event', () => receiver.acked('b-tt').some((r) => r.body.id === test.body.id))
    const t = receiver.acked('b-tt').find((r) => r.body.id === test.body.id)
    if (!t) throw new Error('no test delivery')
    expect(verifiesB(t, tt.signing_secret)).toBe(true)
    expect(t.body).toMatchObject({ type: 'TOKEN_TRANSFER', chainId: 31337, test: true })
  })

  it('retries a failing receiver 7 times on the form B schedule, then marks the event failed; the webhook stays active', async () => {
    const { receiver, smtp, storage } = fx
    receiver.mode('b-fail', 'fail')
    const F2 = '0x00000000000000000000000000000000000000f7'
    const wh = await createB('b-fail', 'address_activity', { addresses: [F2] })
    await sendEth(F2, 1n)
    const failed = async () =>
      (
        await storage.db
          .selectFrom('webhook_events')
          .select(['status', 'attempts'])
          .where('webhook_id', '=', wh.id)
          .executeTakeFirst()
      )?.status === 'failed'
    await until('the event failed', failed)
    const history = await deliveries(wh.id)
    expect(history.map((d) => [d.attempt, d.status_code])).toEqual(
      [1, 2, 3, 4, 5, 6, 7, 8].map((n) => [n, 500]),
    )
    const arrivals = receiver.received.filter((r) => r.name === 'b-fail').map((r) => r.at)
    expect(arrivals).toHaveLength(8)
    for (let i = 0; i < 7; i++)
      expect((arrivals[i + 1] as number) - (arrivals[i] as number)).toBeGreaterThanOrEqual(
        SCHEDULE_B_MS[i] as number,
      )
    // Every attempt carries the same event id as its idempotency key.
    const keys = new Set(
      receiver.received.filter((r) => r.name === 'b-fail').map((r) => r.headers['x-webhook-idempotency-key']),
    )
    expect(keys.size).toBe(1)
    const read = await api('GET', `/webhooks/${wh.id}`)
    expect(read.body.status).toBe('active')
    expect(smtp.mails.some((m) => m.raw.includes(wh.id))).toBe(false)

    // Still active: the next event goes out once the receiver recovers.
    receiver.mode('b-fail', 'ok')
    await sendEth(F2, 2n)
    await until('next event', () => receiver.acked('b-fail').length === 1)
    expect(receiver.acked('b-fail')[0]?.body.data.value).toBe('2')
  })

  it('switches form with PATCH and refuses an unknown form with a 400 naming the field', async () => {
    const { receiver } = fx
    const wh = await fx.create('switch', 'address_activity', { addresses: [B] })
    expect((await api('GET', `/webhooks/${wh.id}`)).body.format).toBe('A')
    const bad = await api('PATCH', `/webhooks/${wh.id}`, { format: 'C' })
    expect(bad.status).toBe(400)
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', status: 400 })
    expect(bad.body.error?.message).toMatch(/^format: must be "A"/)
    const badCreate = await api('POST', '/webhooks', {
      url: fx.urlFor('x'),
      chain: 'ethereum-devnet',
      event_type: 'log',
      format: 2,
    })
    expect(badCreate.status).toBe(400)
    expect(badCreate.body.error?.message).toMatch(/format/)

    expect((await api('PATCH', `/webhooks/${wh.id}`, { format: 'B' })).status).toBe(200)
    expect((await api('GET', `/webhooks/${wh.id}`)).body.format).toBe('B')
    await sendEth(B, 3n)
    await until('form B after PATCH', () =>
      receiver.acked('switch').some((r) => r.body.type === 'ADDRESS_ACTIVITY'),
    )
    const got = receiver.acked('switch').find((r) => r.body.type === 'ADDRESS_ACTIVITY')
    if (!got) throw new Error('no delivery')
    expect(verifiesB(got, wh.signing_secret)).toBe(true)
  })

  it('rotates the signing secret: returned once, and the next event verifies with the new secret only', async () => {
    const { receiver } = fx
    const wh = await fx.create('rotate', 'address_activity', { addresses: [A] })
    const rotated = await api('POST', `/webhooks/${wh.id}/rotate-secret`)
    expect(rotated.status).toBe(200)
    expect(Object.keys(rotated.body).sort()).toEqual(['id', 'signing_secret', 'updated_at'])
    const secret = rotated.body.signing_secret as string
    expect(secret).toMatch(/^whsec_/)
    expect(secret).not.toBe(wh.signing_secret)
    expect(JSON.stringify((await api('GET', `/webhooks/${wh.id}`)).body)).not.toContain(secret)

    await sendEth(A, 4n)
    await until('delivery after rotation', () => receiver.acked('rotate').length >= 1)
    const [got] = receiver.acked('rotate')
    expect(verifyWebhook(got?.raw ?? '', got?.headers ?? {}, secret)).toEqual({ ok: true, form: 'A' })
    expect(verifyWebhook(got?.raw ?? '', got?.headers ?? {}, wh.signing_secret).ok).toBe(false)

    const other = await fx.h.createKey({ email: 'someone-else@test.local' })
    expect((await api('POST', `/webhooks/${wh.id}/rotate-secret`, undefined, other)).status).toBe(404)
    expect((await api('POST', '/webhooks/wh_nothex/rotate-secret')).status).toBe(400)
  })
})
