import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { openTestPGlite } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'
import { renderOpenApi } from './openapi-page.ts'

/** The section of the rendered page for one operation (its <details> element). */
function section(page: string, method: string, path: string): string {
  const start = page.indexOf(`<code>${method} ${path}</code>`)
  if (start < 0) throw new Error(`no section for ${method} ${path}`)
  return page.slice(start, page.indexOf('</details>', start))
}

describe('the dashboard API docs page', () => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let page: string

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await openTestPGlite()
    h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage, devMode: true })
    const res = await fetch(`${h.baseUrl}/openapi.json`)
    page = renderOpenApi(await res.json()).value
  })

  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('shows the request body fields of an operation, with types and which are required', () => {
    const create = section(page, 'POST', '/v1/webhooks')
    expect(create).toContain('Request body (JSON)')
    expect(create).toMatch(/<td><code>url<\/code><\/td><td>string[^<]*<\/td><td>yes<\/td>/)
    expect(create).toContain('<code>event_types</code>')
  })

  it('shows query and path parameters with their types', () => {
    const transfers = section(page, 'GET', '/v1/transfers/{chain}/{address}')
    expect(transfers).toMatch(/<code>limit \(query\)<\/code><\/td><td>(integer|number|string)/)
    expect(transfers).toMatch(/<code>address \(path\)<\/code><\/td><td>[^<]+<\/td><td>yes/)
  })

  it('shows every error answer with the error body it carries, and the success fields', () => {
    const balances = section(page, 'GET', '/v1/tokens/{chain}/balances/{address}')
    for (const [status, code] of [
      ['401', 'unauthorized'],
      ['403', 'forbidden'],
      ['429', 'rate_limited'],
    ]) {
      expect(balances).toContain(`<dt><code>${status}</code></dt>`)
      expect(balances).toContain(`&quot;code&quot;:&quot;${code}&quot;`)
    }
    expect(balances).toMatch(/<dt><code>200<\/code><\/dt><dd>[\s\S]*<code>tokens<\/code>/)
  })

  it('escapes what the document says', () => {
    const hostile = renderOpenApi({
      paths: {
        '/x': {
          get: { summary: '<script>alert(1)</script>', parameters: [{ name: '"><img>', in: 'query' }] },
        },
      },
    }).value
    expect(hostile).not.toContain('<script>')
    expect(hostile).not.toContain('"><img>')
    expect(hostile).toContain('&lt;script&gt;')
  })
})
