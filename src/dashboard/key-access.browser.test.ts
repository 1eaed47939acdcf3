import { randomBytes } from 'node:crypto'
import { expect, it } from 'vitest'
import { browserFixture, describeBrowser } from '../../test/fixtures/dashboard/browser-fixture.ts'
import { call, postRpc } from '../../test/helpers/halyard.ts'

/**
 * The key page's allowlists form (docs/browser.md) in a real browser: a bad entry
 * re-shows the form as typed with the error next to its field; a good one is saved (CSRF form,
 * like the page's others), shown in the key table, and the key is refused from other origins.
 */
describeBrowser("dashboard in Chromium: a key's allowlists", () => {
  const fx = browserFixture()

  it("edits a key's allowlists, with field errors, and the gateway follows them", async () => {
    const email = `ka-${randomBytes(4).toString('hex')}@test.local`
    await fx.h.halyard.ctx.auth.createAccount(email, 'growth')
    const ctx = await fx.browser.newContext()
    const page = await ctx.newPage()
    await fx.signIn(page, email)
    await page.getByRole('link', { name: 'API Keys' }).click()
    await page.getByRole('button', { name: 'Create key' }).click()
    const key = (await page.locator('#new-key').textContent()) ?? ''
    await page.goto(`${fx.origin}/dashboard/settings/api-keys`)
    await page.getByRole('link', { name: /Edit allowlists/ }).click()

    await page.getByLabel('Allowed origins').fill('https://app.example.com\n*.example.org')
    await page.getByLabel('Allowed client IPs').fill('10.0.0.0/33')
    await page.getByRole('button', { name: 'Save allowlists' }).click()
    await page.locator('#allow-ips-error').waitFor()
    expect(await page.locator('#allow-ips-error').textContent()).toContain('allowed_ips: entry "10.0.0.0/33"')
    expect(await page.getByLabel('Allowed client IPs').getAttribute('aria-invalid')).toBe('true')
    // What was typed is kept.
    expect(await page.getByLabel('Allowed origins').inputValue()).toBe(
      'https://app.example.com\n*.example.org',
    )
    expect(await fx.axe(page)).toEqual([])

    await page.getByLabel('Allowed client IPs').fill('')
    await page.getByRole('button', { name: 'Save allowlists' }).click()
    await page.getByText('Allowlists saved.').waitFor()
    expect(await page.getByRole('row', { name: /origins \(2\)/ }).count()).toBe(1)

    const rpc = `${fx.h.baseUrl}/rpc/ethereum/devnet`
    expect((await postRpc(rpc, key, call('eth_chainId'))).status).toBe(403)
    expect((await postRpc(rpc, key, call('eth_chainId'), { origin: 'https://a.example.org' })).status).toBe(
      200,
    )
    await ctx.close()
  })
})
