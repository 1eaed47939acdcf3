import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Page } from 'playwright-core'
import { expect, it } from 'vitest'
import { browserFixture, describeBrowser } from '../../test/fixtures/dashboard/browser-fixture.ts'
import { until } from '../../test/helpers/until.ts'

const A = '0x00000000000000000000000000000000000a11ce'
const TOKEN = '0x00000000000000000000000000000000000b0b0b'

interface Delivery {
  path: string
  body: string
  timestamp: string
  signature: string
  verified: boolean
}

/**
 * A receiver written from the documented signature scheme (HMAC-SHA256 keyed with the signing
 * secret over `{X-Service-Timestamp}.{raw body}`, hex), not with Halyard's code: it answers 200
 * "verified" when the signature checks out under the secret it holds, 401 "bad signature" when
 * not, and 503 while told to fail.
 */
async function startReceiver() {
  const state = { secret: '', failing: false, got: [] as Delivery[] }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const timestamp = String(req.headers['x-service-timestamp'] ?? '')
      const signature = String(req.headers['x-service-signature'] ?? '')
      const d = {
        path: req.url ?? '',
        body,
        timestamp,
        signature,
        verified: verify(state.secret, timestamp, body, signature),
      }
      state.got.push(d)
      if (state.failing) return res.writeHead(503).end('receiver down for maintenance')
      res.writeHead(d.verified ? 200 : 401).end(d.verified ? 'verified' : 'bad signature')
    })
  })
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  return {
    state,
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((ok) => server.close(ok)),
  }
}

function verify(secret: string, timestamp: string, body: string, signature: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(signature)) return false
  const want = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest()
  return timingSafeEqual(want, Buffer.from(signature, 'hex'))
}

/**
 * The webhooks console as an account holder walks it in Chromium, by visible names: create a
 * webhook with filters (a refused form keeps what was typed and marks the field), send a test
 * event, open it (payload, attempt with the receiver's answer), edit the URL, rotate the secret
 * (the next delivery verifies with the new secret at a real receiver, not with the old), see a
 * failing event paused, resume and redeliver the failed events of a time range, delete after a
 * confirmation page. Every page: axe (no serious/critical findings), a screenshot, size < 100 KB.
 */
describeBrowser('dashboard in Chromium: the webhooks console', () => {
  const fx = browserFixture()

  it('creates, tests, inspects, edits, rotates, redelivers and deletes a webhook from its pages', async () => {
    const rx = await startReceiver()
    const ctx = await fx.browser.newContext({ viewport: { width: 1200, height: 800 } })
    const page = await ctx.newPage()
    const findings: Record<string, string[]> = {}
    const sizes: Record<string, number> = {}
    const check = async (p: Page, name: string) => {
      await p.waitForLoadState('load')
      findings[name] = await fx.axe(p)
      sizes[name] = Buffer.byteLength(await p.content())
      await fx.shot(p, `webhooks-console-${name}`)
    }
    const email = `wc-${randomBytes(4).toString('hex')}@test.local`
    await fx.h.halyard.ctx.auth.createAccount(email, 'growth')
    await fx.signIn(page, email)

    await page.getByRole('link', { name: 'Webhooks' }).click()
    await check(page, 'list-empty')
    await page.getByRole('link', { name: 'Create a webhook' }).click()
    await check(page, 'new')
    const url1 = `http://127.0.0.1:${rx.port}/hooks/one`
    await page.getByLabel('Receiver URL').fill(url1)
    await page.getByLabel('address_activity').check()
    await page.getByLabel('token_transfer').check()
    await page.getByLabel('Addresses', { exact: true }).fill(`${A}\n0xnot-an-address`)
    await page.getByLabel('Token contracts').fill(TOKEN)
    await page.getByLabel('Address side').selectOption('to')
    await page.getByLabel('Minimum value', { exact: true }).fill('1000')
    const refused = page.waitForResponse((r) => r.request().method() === 'POST')
    await page.getByRole('button', { name: 'Create webhook' }).click()
    expect((await refused).status()).toBe(400)
    // The bad field is named next to itself, and everything typed is still there.
    await page.locator('#wh-addresses-error').waitFor()
    expect(await page.locator('#wh-addresses-error').textContent()).toMatch(/config\.addresses\[1\]/)
    expect(await page.getByLabel('Addresses', { exact: true }).getAttribute('aria-invalid')).toBe('true')
    expect(await page.getByLabel('Receiver URL').inputValue()).toBe(url1)
    expect(await page.getByLabel('token_transfer').isChecked()).toBe(true)
    expect(await page.getByLabel('Token contracts').inputValue()).toBe(TOKEN)
    expect(await page.getByLabel('Address side').inputValue()).toBe('to')
    expect(await page.getByLabel('Minimum value', { exact: true }).inputValue()).toBe('1000')
    await check(page, 'new-refused')

    await page.getByLabel('Addresses', { exact: true }).fill(A)
    await page.getByRole('button', { name: 'Create webhook' }).click()
    await page.locator('#signing-secret').waitFor()
    const secret1 = (await page.locator('#signing-secret').textContent()) ?? ''
    expect(secret1).toMatch(/^whsec_/)
    const id = (await page.getByRole('heading', { level: 1 }).textContent())?.replace('Webhook ', '') ?? ''
    expect(id).toMatch(/^wh_[0-9a-f]{24}$/)
    expect(await page.getByRole('row', { name: /Event types/ }).textContent()).toContain(
      'address_activity, token_transfer',
    )
    await check(page, 'created')
    rx.state.secret = secret1

    // A test event: delivered, verified with the first secret; its page shows payload and attempt.
    await page.getByRole('button', { name: 'Send test event' }).click()
    await page.getByText('Test event queued').waitFor()
    const first = await until('the test event at the receiver', () =>
      rx.state.got.find((d) => d.path === '/hooks/one'),
    )
    expect(first.verified).toBe(true)
    const eventId = (JSON.parse(first.body) as { id: string }).id
    await until('the delivered event on the page', async () => {
      await page.reload()
      return (await page.getByRole('row', { name: new RegExp(`${eventId}.*delivered`) }).count()) === 1
    })
    await check(page, 'detail')
    await page.getByRole('link', { name: eventId }).click()
    await page.getByRole('heading', { name: `Event ${eventId}` }).waitFor()
    const payload = JSON.parse((await page.getByLabel('Payload').textContent()) ?? '{}') as Record<
      string,
      unknown
    >
    expect(payload).toMatchObject({ id: eventId, webhook_id: id, test: true })
    const attempt = page.getByRole('row', { name: /verified/ })
    expect(await attempt.textContent()).toMatch(/^1.*200.* ms.*verified/)
    await page.getByText('A test event (Send test event)').waitFor()
    await check(page, 'event')

    // Edit the URL: saved, shown, and the next delivery goes to the new one.
    await page.getByRole('link', { name: id }).click()
    await page.getByRole('link', { name: 'Edit webhook' }).click()
    expect(await page.getByLabel('Addresses', { exact: true }).inputValue()).toBe(A)
    await check(page, 'edit')
    const url2 = `http://127.0.0.1:${rx.port}/hooks/two`
    await page.getByLabel('Receiver URL').fill(url2)
    await page.getByRole('button', { name: 'Save changes' }).click()
    await page.getByText('Webhook saved.').waitFor()
    expect(await page.locator('#webhook-url').textContent()).toBe(url2)

    // Rotate: the new secret is shown once; the next delivery verifies with it, not the old one.
    await page.getByRole('button', { name: 'Rotate signing secret' }).click()
    await page.getByText('Signing secret rotated').waitFor()
    const secret2 = (await page.locator('#signing-secret').textContent()) ?? ''
    expect(secret2).toMatch(/^whsec_/)
    expect(secret2).not.toBe(secret1)
    await check(page, 'rotated')
    rx.state.secret = secret2
    await page.getByRole('button', { name: 'Send test event' }).click()
    await page.getByText('Test event queued').waitFor()
    const second = await until('the test event at the new URL', () =>
      rx.state.got.find((d) => d.path === '/hooks/two'),
    )
    expect(second.verified).toBe(true)
    expect(verify(secret1, second.timestamp, second.body, second.signature)).toBe(false)

    // A receiver that fails: retries run out, the webhook pauses, the event page shows each answer.
    rx.state.failing = true
    await page.goto(`${fx.origin}/dashboard/webhooks/${id}`)
    await page.getByRole('button', { name: 'Send test event' }).click()
    await page.getByText('Test event queued').waitFor()
    await until('the webhook to pause after failed deliveries', async () => {
      await page.reload()
      return (await page.locator('#webhook-status').textContent()) === 'paused'
    })
    await page.getByLabel('Event status').selectOption('failed')
    await page.getByRole('button', { name: 'Show' }).click()
    const failedLink = page.getByRole('link', { name: /^evt_/ })
    expect(await failedLink.count()).toBe(1)
    await failedLink.click()
    expect(await page.getByRole('row', { name: /503.*receiver down for maintenance/ }).count()).toBe(6)
    await check(page, 'event-failed')
    await page.getByRole('link', { name: id }).click()
    rx.state.failing = false
    await page.getByRole('button', { name: 'Resume' }).click()
    await page.getByText('Webhook resumed.').waitFor()
    const before = rx.state.got.length
    await page.getByRole('button', { name: 'Redeliver failed events' }).click()
    await page.getByText(/^1 failed event\(s\) from .* queued for redelivery\./).waitFor()
    await check(page, 'redelivered')
    const again = await until('the failed event delivered again', () =>
      rx.state.got.slice(before).find((d) => d.verified),
    )
    expect(again.path).toBe('/hooks/two')

    // Delete, after a confirmation page; the list no longer has it.
    await page.goto(`${fx.origin}/dashboard/webhooks/${id}`)
    await page.getByRole('link', { name: 'Delete webhook' }).click()
    await page.getByRole('heading', { name: 'Delete this webhook?' }).waitFor()
    await check(page, 'delete-confirm')
    await page.getByRole('button', { name: 'Delete webhook' }).click()
    await page.getByText('Webhook deleted.').waitFor()
    expect(await page.content()).not.toContain(id)
    await check(page, 'list-after-delete')

    expect(Object.entries(findings).filter(([, v]) => v.length > 0)).toEqual([])
    // Every page with its CSS and JS under 100 KB (the first visit loads all three).
    const assets = await Promise.all(
      ['/dashboard/assets/dashboard.css', '/dashboard/assets/dashboard.js'].map(
        async (p) => (await (await page.request.get(`${fx.origin}${p}`)).body()).length,
      ),
    )
    const heaviest = Math.max(...Object.values(sizes))
    console.log(`webhooks console: heaviest page ${heaviest} B + assets ${assets.join(' + ')} B`, sizes)
    expect(heaviest + assets.reduce((a, b) => a + b, 0)).toBeLessThan(100_000)
    await ctx.close()
    await rx.close()
  }, 240_000)
})
