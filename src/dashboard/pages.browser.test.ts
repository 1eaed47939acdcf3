import { randomBytes } from 'node:crypto'
import { expect, it } from 'vitest'
import { browserFixture, describeBrowser } from '../../test/fixtures/dashboard/browser-fixture.ts'
import { call, postRpc } from '../../test/helpers/halyard.ts'
import { until } from '../../test/helpers/until.ts'
import { readUsage, resolveRange } from '../usage/service.ts'

const A = '0x00000000000000000000000000000000000a11ce'

/**
 * The dashboard's pages in a real browser: a paused webhook resumed from its page
 * and then delivered; sign out everywhere; axe-core on every page (no serious or critical
 * violations) with a screenshot of each (docs/screenshots, shown in docs/dashboard.md).
 */
describeBrowser('dashboard in Chromium: webhooks, sessions, accessibility of every page', () => {
  const fx = browserFixture({ sponsorship: true })
  const newAccount = async () => {
    const email = `p-${randomBytes(4).toString('hex')}@test.local`
    await fx.h.halyard.ctx.auth.createAccount(email, 'growth')
    return email
  }

  it('resumes a webhook paused by failed deliveries from its page; its event is then delivered', async () => {
    const ctx = await fx.browser.newContext()
    const page = await ctx.newPage()
    await fx.signIn(page, await newAccount())
    fx.receiver.mode('flaky', 'fail')
    await page.getByRole('link', { name: 'Webhooks' }).click()
    await page.getByRole('link', { name: 'Create a webhook' }).click()
    await page.getByLabel('Receiver URL').fill(`http://127.0.0.1:${fx.receiver.port}/wh/flaky`)
    await page.getByLabel('address_activity').check()
    await page.getByLabel('Addresses', { exact: true }).fill(A)
    await page.getByRole('button', { name: 'Create webhook' }).click()
    expect(await page.locator('#signing-secret').textContent()).toMatch(/^whsec_/)
    const webhookUrl = page.url().endsWith('/dashboard/webhooks') ? undefined : page.url()
    const id = (await page.getByRole('heading', { level: 1 }).textContent())?.replace('Webhook ', '') ?? ''
    expect(id).toMatch(/^wh_/)
    expect(webhookUrl).toBeUndefined() // the secret page is the POST's answer, never a URL to reload

    await page.getByRole('button', { name: 'Send test event' }).click()
    await page.getByText('Test event queued').waitFor()
    // First attempt and five compressed retries fail: the service pauses the webhook.
    await until(
      'the webhook to be paused',
      async () =>
        (
          await fx.h.halyard.ctx.storage.db
            .selectFrom('webhooks')
            .select('status')
            .where('id', '=', id)
            .executeTakeFirst()
        )?.status === 'paused',
    )
    await page.goto(`${fx.origin}/dashboard/webhooks/${id}`)
    expect(await page.locator('#webhook-status').textContent()).toBe('paused')
    expect(await page.getByRole('row', { name: /500/ }).count()).toBeGreaterThanOrEqual(6)
    await fx.shot(page, 'webhook-paused')

    fx.receiver.mode('flaky', 'ok')
    await page.getByRole('button', { name: 'Resume' }).click()
    await page.getByText('Webhook resumed.').waitFor()
    expect(await page.locator('#webhook-status').textContent()).toBe('active')
    await page
      .getByRole('button', { name: /^Redeliver/ })
      .first()
      .click()
    await page.getByText(/queued for redelivery/).waitFor()
    await until('the event to reach the receiver with a 200', () =>
      fx.receiver.received.find((r) => r.name === 'flaky' && r.status === 200),
    )
    // The page's attempt log shows the successful delivery (time, event, attempt, 200, duration).
    await until('the 200 attempt to show on the webhook page', async () => {
      await page.reload()
      return (await page.getByRole('cell', { name: '200', exact: true }).count()) > 0
    })
    // The filter lists it among the active ones, and not among the paused.
    await page.goto(`${fx.origin}/dashboard/webhooks?status=paused`)
    expect(await page.content()).not.toContain(id)
    await page.goto(`${fx.origin}/dashboard/webhooks?status=active`)
    expect(await page.content()).toContain(`/wh/flaky`)
    await ctx.close()
  })

  it('creates, edits, pauses and resumes a gas policy in the page; bad rules are refused naming the rule', async () => {
    const ctx = await fx.browser.newContext()
    const page = await ctx.newPage()
    await fx.signIn(page, await newAccount())
    await page.getByRole('link', { name: 'Gas policies' }).click()
    await page.getByLabel('Name').fill('<b>launch</b> promo')
    await page.getByLabel('Rules (JSON)').fill('{"max_gas_usd": "5", "max_spend_usd": "100"}')
    await page.getByRole('button', { name: 'Create policy' }).click()
    const created = page.getByText(/Policy <b>launch<\/b> promo created: use policy id gp_[0-9a-f]{24}/)
    const policyId = /gp_[0-9a-f]{24}/.exec((await created.textContent()) ?? '')?.[0]
    await page.getByLabel('Rules (JSON)').fill('{"max_gas_usd": "-1"}')
    const refused = page.waitForResponse((r) => r.request().method() === 'POST')
    await page.getByRole('button', { name: 'Save' }).click()
    expect((await refused).status()).toBe(400)
    await page.getByText(/rules\.max_gas_usd/).waitFor()
    await page.goto(`${fx.origin}/dashboard/gas-policies/${policyId}`)
    await page.getByLabel('Rules (JSON)').fill('{"max_gas_usd": "2", "max_spend_usd": "50"}')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByText('Policy saved.').waitFor()
    expect(await page.getByLabel('Rules (JSON)').inputValue()).toContain('"max_gas_usd": "2"')
    await page.getByRole('button', { name: 'Pause' }).click()
    await page.getByText('Policy paused.').waitFor()
    await page.getByRole('button', { name: 'Resume' }).click()
    await page.getByText('Policy resumed.').waitFor()
    await fx.shot(page, 'gas-policy')
    await page.getByRole('link', { name: 'Gas policies' }).click()
    expect(await page.getByRole('row', { name: /launch/ }).textContent()).toContain('active')
    await ctx.close()
  })

  it('signs out everywhere: every session of the account ends', async () => {
    const email = await newAccount()
    const one = await fx.browser.newContext()
    const two = await fx.browser.newContext()
    const p1 = await one.newPage()
    const p2 = await two.newPage()
    await fx.signIn(p1, email)
    await fx.signIn(p2, email)
    await p1.getByRole('link', { name: 'Account' }).click()
    expect(await p1.getByRole('row', { name: /this session/ }).count()).toBe(1)
    expect(await p1.locator('tbody tr').count()).toBe(2)
    await p1.getByRole('button', { name: 'Sign out everywhere' }).click()
    await p1.getByRole('heading', { name: 'Sign in' }).waitFor()
    await p2.goto(`${fx.origin}/dashboard/settings/api-keys`)
    await p2.getByRole('heading', { name: 'Sign in' }).waitFor()
    await one.close()
    await two.close()
  })

  it('every page passes axe-core (no serious or critical violations), is under 100 KB, and is screenshotted', async () => {
    const ctx = await fx.browser.newContext({ viewport: { width: 1200, height: 800 } })
    const page = await ctx.newPage()
    const violations: Record<string, string[]> = {}
    const check = async (name: string) => {
      // A form's click returns once its navigation has begun: the page it lands on loads first.
      await page.waitForLoadState('load')
      violations[name] = await fx.axe(page)
      await fx.shot(page, name)
    }
    await page.goto(`${fx.origin}/dashboard/sign-in`)
    await check('sign-in')
    const email = await newAccount()
    const link = await fx.requestLink(page, email)
    await check('sign-in-sent')
    await page.goto(link)
    await check('sign-in-link')
    await page.getByRole('button', { name: 'Sign in to Halyard' }).click()
    await page.getByRole('heading', { name: 'Overview' }).waitFor()

    await page.goto(`${fx.origin}/dashboard/settings/api-keys`)
    await page.getByLabel('Name').fill('screenshot key')
    await page.getByRole('button', { name: 'Create key' }).click()
    await check('api-keys-created')
    // Some traffic for the usage charts: the overview shows it once the recorder has flushed.
    const key = (await page.locator('#new-key').textContent()) ?? ''
    const rpc = `${fx.h.baseUrl}/rpc/ethereum/devnet`
    for (let i = 0; i < 12; i++)
      await postRpc(rpc, key, call(i % 3 ? 'eth_blockNumber' : 'eth_getBalance', i % 3 ? [] : [A, 'latest']))
    const account = await fx.h.halyard.ctx.auth.accountByEmail(email)
    await until('the usage to be recorded', async () => {
      const u = await readUsage(fx.h.halyard.ctx.storage, account.id, resolveRange({}, Date.now()))
      return u.methods.length >= 2
    })
    await page.goto(`${fx.origin}/dashboard`)
    await check('overview')
    // The range choice, and the per-method chart: every label and number inside the drawing
    // (none cut off), the same numbers in the table beside it.
    await page.getByRole('link', { name: 'Last 7 days' }).click()
    expect(await page.getByRole('link', { name: 'Last 7 days' }).getAttribute('aria-current')).toBe('true')
    expect(await page.getByRole('heading', { name: /^Usage, last 7 days/ }).count()).toBe(1)
    expect(await page.getByRole('row', { name: /eth_getBalance/ }).count()).toBe(1)
    // A string: the test's TypeScript has no DOM types; this runs in the page.
    const overflow =
      await page.evaluate(`[...document.querySelectorAll('figure svg.chart')].flatMap((svg) => {
      const width = svg.viewBox.baseVal.width
      return [...svg.querySelectorAll('text')]
        .filter((t) => { const b = t.getBBox(); return b.x < 0 || b.x + b.width > width })
        .map((t) => t.textContent)
    })`)
    expect(overflow).toEqual([])
    await check('overview-7d')
    await page.goto(`${fx.origin}/dashboard/settings/api-keys`)
    await check('api-keys')
    await page.getByRole('link', { name: /Revoke screenshot key/ }).click()
    await check('api-key-revoke')

    await page.goto(`${fx.origin}/dashboard/webhooks/new`)
    await check('webhook-new')
    await page.getByLabel('Receiver URL').fill(`http://127.0.0.1:${fx.receiver.port}/wh/shot`)
    await page.getByLabel('Addresses', { exact: true }).fill(A)
    await page.getByRole('button', { name: 'Create webhook' }).click()
    await check('webhook-created')
    await page.getByRole('button', { name: 'Send test event' }).click()
    // The form's answer first: a reload while its redirect is loading detaches the page.
    await page.getByText('Test event queued').waitFor()
    await until('the test event to be delivered', () => fx.receiver.received.find((r) => r.name === 'shot'))
    await page.reload()
    await check('webhook')
    await page.goto(`${fx.origin}/dashboard/webhooks`)
    await check('webhooks')

    for (const [name, path] of [
      ['gas-policies', '/dashboard/gas-policies'],
      ['wallets', '/dashboard/wallets'],
      ['docs', '/dashboard/docs'],
      ['account', '/dashboard/account'],
      ['not-found', '/dashboard/webhooks/wh_000000000000000000000000'],
    ] as const) {
      await page.goto(`${fx.origin}${path}`)
      await check(name)
    }
    // First page under 100 KB over the wire: the overview with its CSS and JS.
    const sizes = await Promise.all(
      ['/dashboard', '/dashboard/assets/dashboard.css', '/dashboard/assets/dashboard.js'].map(
        async (p) => (await (await page.request.get(`${fx.origin}${p}`)).body()).length,
      ),
    )
    expect(sizes.reduce((a, b) => a + b, 0)).toBeLessThan(100_000)
    expect(Object.entries(violations).filter(([, v]) => v.length > 0)).toEqual([])
    await ctx.close()
  }, 180_000)
})
