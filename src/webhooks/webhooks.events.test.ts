import { expect, it } from 'vitest'
import { webhooksFixture, X } from '../../test/fixtures/webhooks/webhooks-fixture.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'

interface EventDetail {
  id: string
  status: string
  test: boolean
  matched_by: string[]
  next_retry_at: string | null
  payload: { data?: Record<string, unknown> }
  attempts: Array<{
    attempt: number
    status_code: number | null
    response_body: string | null
    duration_ms: number
  }>
}

/**
 * A webhook's event history over the API (the dashboard's event page reads the same service):
 * a real matched event with its payload, its attempt (the receiver's answer kept) and the filter
 * that made it match; a failing receiver's attempts; the failed events of a time range
 * redelivered; bad ranges and statuses refused naming the field; another account's webhook a 404.
 */
describeEachStorage('webhooks: event history and redelivery of failed events on $name', (backend) => {
  const fx = webhooksFixture(backend)
  const { api, create } = fx
  const detail = async (id: string, eventId: string) => {
    const res = await api('GET', `/webhooks/${id}/events/${eventId}`)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    return res.body as unknown as EventDetail
  }

  it('shows a matched event: payload, attempt with the answer, and the filter that matched', async () => {
    const wh = await create('ev-match', 'address_activity', { addresses: [X], address_match: 'to' })
    await fx.sendEth(X, 1234n)
    await fx.synced()
    const list = await until('the event delivered', async () => {
      const res = await api('GET', `/webhooks/${wh.id}/events?status=delivered`)
      const events = res.body.events as Array<{ id: string; status: string }>
      return events.length === 1 ? events : undefined
    })
    const ev = await until('its attempt recorded', async () => {
      const d = await detail(wh.id, list[0]!.id)
      return d.attempts.length === 1 ? d : undefined
    })
    expect(ev.test).toBe(false)
    expect(String(ev.payload.data?.to).toLowerCase()).toBe(X)
    expect(ev.matched_by).toContain(`addresses: ${X} is the recipient (to)`)
    expect(ev.attempts[0]).toMatchObject({ attempt: 1, status_code: 200, response_body: 'ok' })
    expect(ev.next_retry_at).toBeNull()
  })

  it('keeps a failing receiver answer per attempt, and redelivers the failed events of a range', async () => {
    const name = 'ev-fail'
    const wh = await create(name, 'token_transfer', { addresses: [X] })
    fx.receiver.mode(name, 'fail')
    const test = await api('POST', `/webhooks/${wh.id}/test`)
    const eventId = test.body.id as string
    const failed = await until('the event failed after every retry', async () => {
      const d = await detail(wh.id, eventId)
      return d.status === 'failed' && d.attempts.length === 6 ? d : undefined
    })
    expect(failed.test).toBe(true)
    expect(failed.attempts.map((a) => [a.attempt, a.status_code, a.response_body])).toEqual(
      [1, 2, 3, 4, 5, 6].map((n) => [n, 500, 'no']),
    )
    const failedList = await api('GET', `/webhooks/${wh.id}/events?status=failed`)
    expect((failedList.body.events as unknown[]).length).toBe(1)

    const now = Date.now()
    const range = { from: new Date(now - 3_600_000).toISOString(), to: new Date(now + 60_000).toISOString() }
    // Refusals name the field; an empty range requeues nothing.
    const reversed = await api('POST', `/webhooks/${wh.id}/redeliver-failed`, {
      from: range.to,
      to: range.from,
    })
    expect(reversed.status).toBe(400)
    expect(reversed.body.error?.message).toMatch(/^to: must be after from/)
    const long = await api('POST', `/webhooks/${wh.id}/redeliver-failed`, {
      from: new Date(now - 40 * 86_400_000).toISOString(),
      to: range.to,
    })
    expect(long.body.error?.message).toMatch(/^to: the range may span at most 31 days/)
    const bad = await api('POST', `/webhooks/${wh.id}/redeliver-failed`, { from: 'yesterday', to: range.to })
    expect(bad.status).toBe(400)
    expect(bad.body.error?.message).toMatch(/^from: /)
    const badStatus = await api('GET', `/webhooks/${wh.id}/events?status=lost`)
    expect(badStatus.body.error?.message).toMatch(/^status: must be one of/)
    const before = await api('POST', `/webhooks/${wh.id}/redeliver-failed`, {
      from: new Date(now - 7_200_000).toISOString(),
      to: new Date(now - 3_600_000).toISOString(),
    })
    expect(before.body).toMatchObject({ requeued: 0 })

    // The webhook paused after the failures: resumed, and the failed event sent again.
    expect((await api('PATCH', `/webhooks/${wh.id}`, { status: 'active' })).status).toBe(200)
    fx.receiver.mode(name, 'ok')
    const res = await api('POST', `/webhooks/${wh.id}/redeliver-failed`, range)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toMatchObject({ webhook_id: wh.id, requeued: 1 })
    const done = await until('the failed event delivered', async () => {
      const d = await detail(wh.id, eventId)
      return d.status === 'delivered' ? d : undefined
    })
    expect(done.attempts.at(-1)).toMatchObject({ attempt: 7, status_code: 200, response_body: 'ok' })

    // Another account's webhook does not exist for this one.
    const other = await fx.h.createKey({ email: 'events-other@test.local' })
    for (const [method, p, body] of [
      ['GET', `/webhooks/${wh.id}/events`, undefined],
      ['GET', `/webhooks/${wh.id}/events/${eventId}`, undefined],
      ['POST', `/webhooks/${wh.id}/redeliver-failed`, range],
    ] as const)
      expect((await api(method, p, body, other)).status, `${method} ${p}`).toBe(404)
  })
})
