import { expect, it } from 'vitest'
import { webhooksFixture, X } from '../../test/fixtures/webhooks/webhooks-fixture.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'

/**
 * Redelivering a test event (a reported bug: sent several times while its row stayed
 * `sending`): each redelivery request sends it once more and it ends `delivered`, for both
 * forms, whether the request comes after the delivery is recorded or while it is in flight.
 */
describeEachStorage('webhooks: redelivering test events on $name', (backend) => {
  const fx = webhooksFixture(backend)
  const { api, create } = fx
  const statusOf = async (id: string) =>
    (
      await fx.storage.db
        .selectFrom('webhook_events')
        .select('status')
        .where('id', '=', id)
        .executeTakeFirst()
    )?.status

  for (const format of ['A', 'B'] as const) {
    it(`form ${format}: each redelivery sends the test event once more and it ends delivered`, async () => {
      const name = `redeliver-${format}`
      const wh = await create(name, 'token_transfer', { addresses: [X] })
      if (format === 'B') expect((await api('PATCH', `/webhooks/${wh.id}`, { format })).status).toBe(200)
      const test = await api('POST', `/webhooks/${wh.id}/test`)
      const eventId = test.body.id as string
      const sent = () => fx.receiver.acked(name).length
      await until('the test event', () => sent() === 1)
      await until('the test event recorded delivered', async () => (await statusOf(eventId)) === 'delivered')
      for (let n = 2; n <= 4; n++) {
        const res = await api('POST', `/webhooks/${wh.id}/deliveries/${eventId}/redeliver`)
        expect(res.status).toBe(200)
        await until(`redelivery ${n}`, () => sent() === n)
        await until(`redelivery ${n} recorded`, async () => (await statusOf(eventId)) === 'delivered')
      }
      // Asked again while a redelivery may still be in flight: it never stays `sending`.
      await api('POST', `/webhooks/${wh.id}/deliveries/${eventId}/redeliver`)
      await api('POST', `/webhooks/${wh.id}/deliveries/${eventId}/redeliver`)
      await until('the last redelivery recorded', async () => (await statusOf(eventId)) === 'delivered')
      const attempts = await fx.deliveries(wh.id)
      await until('every attempt recorded', async () => (await fx.deliveries(wh.id)).length === sent())
      expect(attempts.every((d) => d.status_code === 200)).toBe(true)
      expect(fx.receiver.acked(name).every((r) => r.body.id === eventId)).toBe(true)
    })
  }
})
