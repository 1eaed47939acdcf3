import { expect, it } from 'vitest'
import { B, F, H, R, SCHEDULE_MS, webhooksFixture, X } from '../../test/fixtures/webhooks/webhooks-fixture.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { DEV_ACCOUNT } from '../devnet/demo.ts'

/**
 * Webhooks end to end on real parts (see test/fixtures/webhooks/webhooks-fixture.ts) when the receiver fails: retries
 * on schedule then pause and e-mail, timeouts, events undone by a reorg, redirects.
 * Delivery of every event type and the API are in webhooks.delivery.test.ts.
 */
describeEachStorage('webhooks: failing receivers on $name', (backend) => {
  const fx = webhooksFixture(backend)
  const { api, create, deliveries, sendEth, synced } = fx

  it('retries a failing receiver exactly 5 times on schedule, pauses, e-mails once, and resumes on PATCH', async () => {
    const { receiver, smtp } = fx
    receiver.mode('fail', 'fail')
    const wh = await create('fail', 'address_activity', { addresses: [F] })
    await sendEth(F, 1n)
    await until('paused', async () => (await api('GET', `/webhooks/${wh.id}`)).body.status === 'paused')
    const history = await deliveries(wh.id)
    expect(history.map((d) => [d.attempt, d.status_code])).toEqual([1, 2, 3, 4, 5, 6].map((n) => [n, 500]))
    expect(new Set(history.map((d) => d.event_id)).size).toBe(1)
    const arrivals = receiver.received.filter((r) => r.name === 'fail').map((r) => r.at)
    expect(arrivals).toHaveLength(6)
    // Retry n never goes out before its scheduled delay after the previous attempt.
    for (let i = 0; i < 5; i++)
      expect((arrivals[i + 1] as number) - (arrivals[i] as number)).toBeGreaterThanOrEqual(
        SCHEDULE_MS[i] as number,
      )
    await until('the e-mail', () => smtp.mails.length >= 1)
    expect(smtp.mails).toHaveLength(1)
    expect(smtp.mails[0]?.to).toEqual([fx.owner])
    expect(smtp.mails[0]?.raw).toContain(wh.id)

    // Paused: new activity makes no events.
    await sendEth(F, 2n)
    await synced()
    receiver.mode('fail', 'ok')
    const patched = await api('PATCH', `/webhooks/${wh.id}`, { status: 'active' })
    expect(patched.status).toBe(200)
    expect(Object.keys(patched.body).sort()).toEqual([
      'chain',
      'event_type',
      'event_types',
      'id',
      'status',
      'updated_at',
      'url',
    ])
    expect(patched.body.status).toBe('active')
    await sendEth(F, 3n)
    await until('resumed delivery', () => receiver.acked('fail').length >= 1)
    expect(receiver.acked('fail').map((r) => r.body.data.value)).toEqual(['3'])

    // The failed event can be sent again by hand; it keeps its id.
    const failedId = history[0]?.event_id as string
    expect((await api('POST', `/webhooks/${wh.id}/deliveries/${failedId}/redeliver`)).status).toBe(200)
    await until('redelivery', () => receiver.acked('fail').length >= 2)
    expect(receiver.acked('fail')[1]?.body).toMatchObject({ id: failedId, data: { value: '1' } })
    expect(smtp.mails).toHaveLength(1)
  })

  it('cuts an attempt to a receiver that never answers at the timeout', async () => {
    const { receiver } = fx
    receiver.mode('hang', 'hang')
    const wh = await create('hang', 'address_activity', { addresses: [H] })
    await sendEth(H, 1n)
    await until('two attempts', async () => (await deliveries(wh.id)).length >= 2)
    for (const d of (await deliveries(wh.id)).slice(0, 2)) {
      expect(d.status_code).toBeNull()
      expect(d.error).toMatch(/^timeout: no response within 3000 ms/)
      expect(d.duration_ms).toBeGreaterThanOrEqual(3000)
    }
    // A receiver that hangs holds up nothing else: another webhook is served meanwhile.
    const fast = await create('fast', 'address_activity', { addresses: [X] })
    await api('POST', `/webhooks/${fast.id}/test`)
    await until('the other webhook', () => receiver.acked('fast').length === 1)
    expect((await api('GET', `/webhooks/${wh.id}`)).body.status).toBe('active')
    expect((await deliveries(wh.id)).length).toBeLessThan(6)
    expect(await api('DELETE', `/webhooks/${wh.id}`)).toEqual({
      status: 200,
      body: { id: wh.id, deleted: true },
    })
    expect((await api('GET', `/webhooks/${wh.id}`)).status).toBe(404)
    expect((await api('DELETE', `/webhooks/${wh.id}`)).status).toBe(404)
  })

  it('never delivers an event whose block a reorg undid; delivers the replacing one', async () => {
    const { dev, storage, receiver } = fx
    receiver.mode('reorg', 'hang')
    const wh = await create('reorg', 'address_activity', { addresses: [R] })
    await sendEth(R, 1n)
    // The first attempt is in flight (the receiver holds it) when the block is undone.
    await until('first attempt', () => receiver.received.some((r) => r.name === 'reorg'))
    const undone = JSON.parse(receiver.received.find((r) => r.name === 'reorg')?.raw ?? '{}').id as string
    await dev.rpc('anvil_reorg', [1, [[{ from: DEV_ACCOUNT, to: R, value: '0x2', gas: '0x5208' }, 0]]])
    const status = async () =>
      (
        await storage.db
          .selectFrom('webhook_events')
          .select('status')
          .where('id', '=', undone)
          .executeTakeFirst()
      )?.status
    await until('cancellation', async () => (await status()) === 'cancelled')
    receiver.mode('reorg', 'ok')
    await until('the replacing event', () => receiver.acked('reorg').some((r) => r.body.data.value === '2'))
    expect(receiver.acked('reorg').map((r) => r.body.id)).not.toContain(undone)
    expect(await status()).toBe('cancelled')
    expect(wh.status).toBe('active')
  })

  it('records a redirect as a failed attempt and never follows it', async () => {
    const { receiver } = fx
    receiver.mode('redirect', 'redirect')
    receiver.location = `https://127.0.0.1:${receiver.port}/wh/target`
    const wh = await create('redirect', 'address_activity', { addresses: [B] })
    await api('POST', `/webhooks/${wh.id}/test`)
    await until('an attempt', async () => (await deliveries(wh.id)).length >= 1)
    const [first] = await deliveries(wh.id)
    expect(first?.status_code).toBe(302)
    expect(first?.error).toMatch(/^redirect: receiver answered 302 \(redirects are not followed\)/)
    expect(receiver.received.filter((r) => r.name === 'target')).toHaveLength(0)
    await api('DELETE', `/webhooks/${wh.id}`)
  })

  it('disables a webhook whose URL stops passing the safety checks at delivery, e-mails, and re-enables on PATCH', async () => {
    const { receiver, smtp, storage } = fx
    const D = '0x00000000000000000000000000000000000000f9'
    const wh = await create('dis', 'address_activity', { addresses: [D] })
    // The host now answers a private address (a DNS change): simulated by pointing the stored
    // URL at evil.test, which HALYARD_WEBHOOK_HOSTS pins to 10.0.0.1. The API would refuse it.
    await storage.db
      .updateTable('webhooks')
      .set({ url: `https://evil.test:${receiver.port}/wh/dis` })
      .where('id', '=', wh.id)
      .execute()
    const mailsBefore = smtp.mails.length
    await sendEth(D, 1n)
    await until('disabled', async () => (await api('GET', `/webhooks/${wh.id}`)).body.status === 'disabled')
    const read = await api('GET', `/webhooks/${wh.id}`)
    expect(read.body.status_reason).toMatch(/^url refused at delivery: blocked_address: /)
    expect(receiver.received.filter((r) => r.name === 'dis')).toHaveLength(0)
    await until('the e-mail', () => smtp.mails.length > mailsBefore)
    const mail = smtp.mails[smtp.mails.length - 1]
    expect(mail?.to).toEqual([fx.owner])
    expect(mail?.raw).toContain(wh.id)
    expect(mail?.raw).toContain('disabled')
    // PATCH status cannot revive it; a URL that passes does, and the kept event goes out.
    expect((await api('PATCH', `/webhooks/${wh.id}`, { status: 'active' })).status).toBe(400)
    const patched = await api('PATCH', `/webhooks/${wh.id}`, { url: fx.urlFor('dis') })
    expect(patched.body.status).toBe('active')
    await until('the kept event', () => receiver.acked('dis').length === 1)
    expect(receiver.acked('dis')[0]?.body.data.value).toBe('1')
    expect((await api('GET', `/webhooks/${wh.id}`)).body.status_reason).toBeNull()
  })
})
