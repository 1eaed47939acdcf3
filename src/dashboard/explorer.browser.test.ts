import { randomBytes } from 'node:crypto'
import { expect, it } from 'vitest'
import { browserFixture, describeBrowser } from '../../test/fixtures/dashboard/browser-fixture.ts'
import { call, postRpc } from '../../test/helpers/halyard.ts'
import { until } from '../../test/helpers/until.ts'

/**
 * The request explorer and a key's page in a real browser, by visible names: a failing JSON-RPC
 * call made with a key is found in Requests by its request id, with its error, params and
 * answer; the key's page shows its usage (calls and errors per method), takes a new name, and
 * its allowlists restrict it to one origin, after which a request from another origin is refused
 * (and shows in Requests as a 403). Every page: axe-core (no serious or critical findings), a
 * screenshot (docs/screenshots), and the first page under 100 KB with its CSS and JS.
 */
describeBrowser('dashboard in Chromium: request explorer, key usage and allowlists', () => {
  const fx = browserFixture()

  it("finds a failing call by its request id, shows the key's usage, restricts the key to an origin", async () => {
    const email = `rx-${randomBytes(4).toString('hex')}@test.local`
    await fx.h.halyard.ctx.auth.createAccount(email, 'growth')
    const ctx = await fx.browser.newContext({ viewport: { width: 1200, height: 800 } })
    const page = await ctx.newPage()
    const violations: Record<string, string[]> = {}
    const check = async (name: string) => {
      await page.waitForLoadState('load')
      violations[name] = await fx.axe(page)
      await fx.shot(page, name)
    }
    await fx.signIn(page, email)
    await page.getByRole('link', { name: 'API Keys' }).click()
    await page.getByLabel('Name').fill('explorer key')
    await page.getByRole('button', { name: 'Create key' }).click()
    const key = (await page.locator('#new-key').textContent()) ?? ''
    expect(key).toMatch(/^halyard_test_/)

    // The failing call: a method the gateway does not serve (-32601), with our own request id.
    const rpc = `${fx.h.baseUrl}/rpc/ethereum/devnet`
    const requestId = `explorer-${randomBytes(6).toString('hex')}`
    const failed = await postRpc(rpc, key, call('eth_noSuchMethod', ['0xabc']), { 'x-request-id': requestId })
    expect(failed.status).toBe(200)
    expect((failed.json as { error?: { code: number } }).error?.code).toBe(-32601)
    expect((await postRpc(rpc, key, call('eth_blockNumber'))).status).toBe(200)

    await page.getByRole('link', { name: 'Requests' }).click()
    await page.getByLabel('Request id').fill(requestId)
    // Recorded in batches (every 2 s): filter again until it shows.
    await until('the failing call to show in Requests', async () => {
      await page.getByRole('button', { name: 'Filter' }).click()
      await page.waitForLoadState('load')
      return (await page.getByRole('link', { name: new RegExp(requestId) }).count()) === 1
    })
    const row = page.getByRole('row', { name: new RegExp(requestId) })
    expect(await row.textContent()).toContain('eth_noSuchMethod')
    expect(await row.textContent()).toContain('200 · -32601')
    expect(await row.textContent()).toContain('explorer key')
    await check('requests')
    // The filter keeps what was typed.
    expect(await page.getByLabel('Request id').inputValue()).toBe(requestId)

    await page.getByRole('link', { name: new RegExp(requestId) }).click()
    await page.getByRole('heading', { name: 'Request', exact: true }).waitFor()
    expect(await page.locator('#request-id').textContent()).toBe(requestId)
    expect(await page.locator('#request-status').textContent()).toBe('200 · -32601')
    expect(await page.locator('#request-error').textContent()).toMatch(/eth_noSuchMethod/)
    expect(await page.locator('#request-params').textContent()).toBe('["0xabc"]')
    expect(await page.locator('#request-answer').textContent()).toContain('"code":-32601')
    await check('request-detail')

    // The key's page: its usage per method (every call counted), last used, a new name.
    await page.getByRole('link', { name: 'API Keys' }).click()
    await page
      .getByRole('link', { name: /explorer key/ })
      .first()
      .click()
    await page.getByRole('heading', { name: 'API key explorer key' }).waitFor()
    await until("the key's usage to show", async () => {
      await page.reload()
      return (await page.getByRole('row', { name: /eth_blockNumber/ }).count()) === 1
    })
    // eth_noSuchMethod is no method this server knows: counted under "other", as an error.
    expect((await page.getByRole('row', { name: /^other/ }).textContent())?.replace(/\s+/g, ' ')).toMatch(
      /other\s*1\s*0\s*1\s*0/,
    )
    expect(await page.getByRole('row', { name: /eth_blockNumber/ }).textContent()).toMatch(
      /eth_blockNumber\s*1/,
    )
    await check('api-key')
    await page.getByLabel('Key name').fill('renamed key')
    await page.getByRole('button', { name: 'Save name' }).click()
    await page.getByText('Name saved.').waitFor()
    await page.getByRole('heading', { name: 'API key renamed key' }).waitFor()

    // Restrict the key to one origin from its page; another origin is then refused.
    await page.getByRole('link', { name: /Edit allowlists/ }).click()
    await page.getByLabel('Allowed origins').fill('https://app.example.com')
    await check('api-key-allowlists')
    await page.getByRole('button', { name: 'Save allowlists' }).click()
    await page.getByText('Allowlists saved.').waitFor()
    const refusedId = `explorer-origin-${randomBytes(4).toString('hex')}`
    const refused = await postRpc(rpc, key, call('eth_chainId'), {
      origin: 'https://other.example.net',
      'x-request-id': refusedId,
    })
    expect(refused.status).toBe(403)
    expect(JSON.stringify(refused.json)).toMatch(/origin/i)
    const allowed = await postRpc(rpc, key, call('eth_chainId'), { origin: 'https://app.example.com' })
    expect(allowed.status).toBe(200)

    // The refusal is in Requests too, with its reason.
    await page.getByRole('link', { name: 'Requests' }).click()
    await page.getByLabel('Status').fill('403')
    await until('the refused request to show in Requests', async () => {
      await page.getByRole('button', { name: 'Filter' }).click()
      await page.waitForLoadState('load')
      return (await page.getByRole('link', { name: new RegExp(refusedId) }).count()) === 1
    })
    await page.getByRole('link', { name: new RegExp(refusedId) }).click()
    expect(await page.locator('#request-error').textContent()).toMatch(/origin/i)

    // First page under 100 KB over the wire: the explorer with its CSS and JS.
    const sizes = await Promise.all(
      ['/dashboard/requests', '/dashboard/assets/dashboard.css', '/dashboard/assets/dashboard.js'].map(
        async (p) => (await (await page.request.get(`${fx.origin}${p}`)).body()).length,
      ),
    )
    expect(sizes.reduce((a, b) => a + b, 0)).toBeLessThan(100_000)
    expect(Object.entries(violations).filter(([, v]) => v.length > 0)).toEqual([])
    await ctx.close()
  })

  it("shows one account's requests only: another account's request id is not found", async () => {
    const mine = `rx-${randomBytes(4).toString('hex')}@test.local`
    const theirs = `rx-${randomBytes(4).toString('hex')}@test.local`
    const auth = fx.h.halyard.ctx.auth
    await auth.createAccount(mine, 'growth')
    await auth.createAccount(theirs, 'growth')
    const other = await auth.createKey({ accountEmail: theirs, env: 'test' })
    const theirId = `theirs-${randomBytes(4).toString('hex')}`
    await postRpc(`${fx.h.baseUrl}/rpc/ethereum/devnet`, other.key, call('eth_chainId'), {
      'x-request-id': theirId,
    })
    await fx.h.halyard.services.requests.recorder?.flush()
    const ctx = await fx.browser.newContext()
    const page = await ctx.newPage()
    await fx.signIn(page, mine)
    await page.goto(`${fx.origin}/dashboard/requests?request_id=${theirId}`)
    await page.getByText('No recorded requests match.').waitFor()
    const res = await page.goto(`${fx.origin}/dashboard/requests/detail?request_id=${theirId}&item=0`)
    expect(res?.status()).toBe(404)
    await ctx.close()
  })
})
