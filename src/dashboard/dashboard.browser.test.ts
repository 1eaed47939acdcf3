import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Page } from 'playwright-core'
import { expect, it } from 'vitest'
import { browserFixture, describeBrowser } from '../../test/fixtures/dashboard/browser-fixture.ts'
import { call, postRpc } from '../../test/helpers/halyard.ts'
import { until } from '../../test/helpers/until.ts'

const A = '0x00000000000000000000000000000000000a11ce'

/**
 * The dashboard in a real browser: sign-in by e-mailed link, API keys made and
 * revoked in the page and used on /v1/rpc, single-use links, cross-site POSTs, hostile input.
 */
describeBrowser('dashboard in Chromium: sign-in, API keys, CSRF, hostile input', () => {
  const fx = browserFixture()
  const newAccount = async () => {
    const email = `b-${randomBytes(4).toString('hex')}@test.local`
    await fx.h.halyard.ctx.auth.createAccount(email, 'growth')
    return email
  }
  const csrfOf = (page: Page) => page.locator('input[name=_csrf]').first().inputValue()

  it('signs in with an e-mailed link, creates a key that works on /v1/rpc, revokes it in the page (401)', async () => {
    const ctx = await fx.browser.newContext()
    const page = await ctx.newPage()
    await fx.signIn(page, await newAccount())
    const cookie = (await ctx.cookies()).find((c) => c.name === 'halyard_session')
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/dashboard' })

    await page.getByRole('link', { name: 'API Keys' }).click()
    await page.getByLabel('Name').fill('ci key')
    await page.getByLabel('rpc:read').check()
    await page.getByRole('button', { name: 'Create key' }).click()
    const key = (await page.locator('#new-key').textContent()) ?? ''
    expect(key).toMatch(/^halyard_test_[A-Za-z0-9]{32}$/)
    await expect.poll(() => page.getByRole('row', { name: /ci key/ }).textContent()).toContain('active')

    const rpcUrl = `${fx.h.baseUrl}/rpc/ethereum/devnet`
    expect(await page.getByRole('row', { name: /ci key/ }).textContent()).toContain('never')
    expect((await postRpc(rpcUrl, key, call('eth_chainId'))).status).toBe(200)
    // "Last used" is written by the periodic flush; run it now rather than wait for the timer.
    await fx.h.halyard.ctx.auth.flushLastUsed()
    // Not reload(): this page is the answer to the create POST, which would be sent again.
    await page.getByRole('link', { name: 'API Keys' }).click()
    await expect
      .poll(() =>
        page
          .getByRole('row', { name: /ci key/ })
          .locator('time')
          .count(),
      )
      .toBe(2)
    expect(await page.getByRole('row', { name: /ci key/ }).textContent()).not.toContain('never')

    await page.getByRole('link', { name: /Revoke ci key/ }).click()
    await page.getByRole('button', { name: 'Revoke key' }).click()
    await page.getByText('Key revoked.').waitFor()
    await until(
      'the revoked key to be refused',
      async () => (await postRpc(rpcUrl, key, call('eth_chainId'))).status === 401,
    )
    // The key is never shown again: the list shows only its prefix.
    expect(await page.content()).not.toContain(key)
    await ctx.close()
  })

  it('refuses a sign-in link used twice, and one that is not ours', async () => {
    const email = await newAccount()
    const first = await fx.browser.newContext()
    const page = await first.newPage()
    const link = await fx.requestLink(page, email)
    await page.goto(link)
    await page.getByRole('button', { name: 'Sign in to Halyard' }).click()
    await page.getByRole('heading', { name: 'Overview' }).waitFor()

    const second = await fx.browser.newContext()
    const again = await second.newPage()
    await again.goto(link)
    const answer = again.waitForResponse(
      (r) => r.url().endsWith('/dashboard/sign-in/link') && r.request().method() === 'POST',
    )
    await again.getByRole('button', { name: 'Sign in to Halyard' }).click()
    expect((await answer).status()).toBe(400)
    await again.getByText(/already used, has expired or is not one of ours/).waitFor()
    expect((await second.cookies()).find((c) => c.name === 'halyard_session')).toBeUndefined()

    await again.goto(`${fx.origin}/dashboard/sign-in/link?token=${'x'.repeat(43)}`)
    await again.getByRole('button', { name: 'Sign in to Halyard' }).click()
    await again.getByText(/already used, has expired or is not one of ours/).waitFor()
    await first.close()
    await second.close()
  })

  it('answers the sign-in form the same way for an unknown address (and sends nothing)', async () => {
    const ctx = await fx.browser.newContext()
    const page = await ctx.newPage()
    const before = fx.smtp.mails.length
    await page.goto(`${fx.origin}/dashboard/sign-in`)
    await page.getByLabel('E-mail').fill('nobody-here@test.local')
    await page.getByRole('button', { name: 'E-mail me a sign-in link' }).click()
    await page.getByText('a sign-in link is on its way').waitFor()
    // A known address's mail arrives after this one's request: had one been sent, it came first.
    await fx.requestLink(page, await newAccount())
    expect(fx.smtp.mails.slice(before).some((m) => m.to.includes('nobody-here@test.local'))).toBe(false)
    await ctx.close()
  })

  it('refuses a cross-site POST from another origin, even with the session cookie and a same-site page', async () => {
    const ctx = await fx.browser.newContext()
    const page = await ctx.newPage()
    await fx.signIn(page, await newAccount())
    const target = `${fx.origin}/dashboard/settings/api-keys`
    // A page on another port of 127.0.0.1: same site (the cookie goes along), other origin.
    const evil = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end(
        `<!doctype html><form id="f" method="post" action="${target}"><input name="name" value="evil"><input name="env" value="live"></form><script>document.getElementById('f').submit()</script>`,
      )
    })
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', () => r()))
    try {
      const answer = page.waitForResponse((r) => r.url() === target && r.request().method() === 'POST')
      await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`)
      expect((await answer).status()).toBe(403)
      await page.getByText(/cross-site request refused/).waitFor()
    } finally {
      evil.close()
    }
    // The right CSRF token from another Origin is still refused; the same token from ours works.
    await page.goto(target)
    const csrf = await csrfOf(page)
    const forged = await page.request.post(target, {
      form: { _csrf: csrf, name: 'forged', env: 'test' },
      headers: { origin: 'http://evil.example', accept: 'application/json' },
    })
    expect(forged.status()).toBe(403)
    expect((await forged.json()).error).toMatchObject({ code: 'forbidden' })
    const noToken = await page.request.post(target, {
      form: { name: 'no token', env: 'test' },
      headers: { origin: fx.origin, accept: 'application/json' },
    })
    expect(noToken.status()).toBe(403)
    expect((await noToken.json()).error.message).toMatch(/^_csrf: /)
    await page.reload()
    expect(await page.content()).not.toContain('forged')
    expect(await page.content()).not.toContain('evil')
    await ctx.close()
  })

  it('shows hostile input escaped, and refuses oversized and wrong-typed fields naming the field', async () => {
    const ctx = await fx.browser.newContext()
    const page = await ctx.newPage()
    await fx.signIn(page, await newAccount())
    const keys = `${fx.origin}/dashboard/settings/api-keys`
    await page.goto(keys)
    const hostile = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
    await page.getByLabel('Name').fill(hostile)
    await page.getByRole('button', { name: 'Create key' }).click()
    await page.locator('#new-key').waitFor()
    expect(
      await page
        .getByRole('row', { name: /script/ })
        .first()
        .textContent(),
    ).toContain(hostile)
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined()

    const csrf = await csrfOf(page)
    const post = (url: string, form: Record<string, string>, accept = 'application/json') =>
      page.request.post(url, { form: { _csrf: csrf, ...form }, headers: { origin: fx.origin, accept } })
    const long = await post(keys, { name: 'n'.repeat(5000), env: 'test' })
    expect(long.status()).toBe(400)
    expect((await long.json()).error.message).toMatch(/^name: must be at most 100 characters/)
    const env = await post(keys, { name: 'x', env: 'prod' })
    expect((await env.json()).error.message).toMatch(/^env: /)
    const scope = await post(keys, { name: 'x', env: 'test', scopes: 'root' })
    expect((await scope.json()).error.message).toMatch(/^scopes\.0: /)
    // Wrong types: a JSON body with a number for the name.
    const typed = await page.request.post(keys, {
      data: { _csrf: csrf, name: 5, env: 'test' },
      headers: { origin: fx.origin, accept: 'application/json' },
    })
    expect(typed.status()).toBe(400)
    expect((await typed.json()).error.message).toMatch(/^name: must be given once, as text/)
    const nul = await post(keys, { name: 'a\u0000b', env: 'test' })
    expect((await nul.json()).error.message).toMatch(/^name: /)

    // Webhook URLs: a script URL and markup in the URL are refused naming url, shown escaped.
    const hooks = `${fx.origin}/dashboard/webhooks`
    for (const url of ['javascript:alert(1)', 'https://x.test/"><script>window.__pwned=3</script>']) {
      const res = await post(
        hooks,
        { url, chain: 'ethereum-devnet', event_types: 'address_activity', addresses: A },
        'text/html',
      )
      expect(res.status()).toBe(400)
      const text = await res.text()
      expect(text).toMatch(/url: /)
      expect(text).not.toContain('<script>window.__pwned')
    }
    const badJson = await post(hooks, {
      url: 'https://x.test/',
      chain: 'ethereum-devnet',
      event_types: 'log',
      topics: '[null,',
    })
    expect((await badJson.json()).error.message).toMatch(/^topics: not valid JSON/)
    const badType = await post(hooks, {
      url: 'https://x.test/',
      chain: 'ethereum-devnet',
      event_types: '<b>x</b>',
    })
    expect((await badType.json()).error.message).toMatch(/^event_types: "<b>x<\/b>" is not an event type/)
    await ctx.close()
  })
})
