import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { openTestPGlite } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, type DemoContracts, deployDemo } from '../devnet/demo.ts'
import type { Storage } from '../storage/database.ts'

type Header = { required?: boolean; schema: { type: string; enum?: string[] } }
type Doc = {
  paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, Header> }> }>>
}

const INDEX_HEADERS = [
  'Halyard-Index-Complete-From',
  'Halyard-Index-Indexed-To',
  'Halyard-Index-Partial',
  'Halyard-History-Scan',
]

let anvil: AnvilProcess
let demo: DemoContracts
let storage: Storage
let h: TestHalyard
let doc: Doc
let key: string

beforeAll(async () => {
  anvil = await startAnvil()
  demo = await deployDemo(anvil.url)
  storage = await openTestPGlite()
  h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage })
  doc = (await (await fetch(`${h.halyard.origin}/v1/openapi.json`)).json()) as Doc
  key = await h.createKey({ plan: 'enterprise' })
})
afterAll(async () => {
  await h?.close()
  await storage?.close()
  await anvil?.stop()
})

/** Whether a header's text is a value of its documented schema. */
function fits(value: string, header: Header): boolean {
  if (header.schema.enum) return header.schema.enum.includes(value)
  if (header.schema.type === 'integer') return /^\d+$/.test(value)
  if (header.schema.type === 'boolean') return value === 'true' || value === 'false'
  return value.length > 0
}

describe('response headers in the OpenAPI document', () => {
  it('documents the index headers on exactly the answers that read the index', () => {
    const withIndex = Object.entries(doc.paths)
      .filter(([, item]) => INDEX_HEADERS.every((n) => item.get?.responses['200']?.headers?.[n]))
      .map(([path]) => path)
      .sort()
    expect(withIndex).toEqual([
      '/v1/nfts/{chain}/collection/{contract}',
      '/v1/nfts/{chain}/owned/{address}',
      '/v1/tokens/{chain}/balances/{address}',
      '/v1/transfers/{chain}/{address}',
    ])
  })

  it('answers with the headers it documents, and documents the ones it sends', async () => {
    const calls: [path: string, url: string, keyed: boolean][] = [
      ['/v1/tokens/{chain}/balances/{address}', `/v1/tokens/ethereum-devnet/balances/${DEV_ACCOUNT}`, true],
      ['/v1/nfts/{chain}/owned/{address}', `/v1/nfts/ethereum-devnet/owned/${DEV_ACCOUNT}`, true],
      ['/v1/nfts/{chain}/collection/{contract}', `/v1/nfts/ethereum-devnet/collection/${demo.nft}`, true],
      ['/v1/transfers/{chain}/{address}', `/v1/transfers/ethereum-devnet/${DEV_ACCOUNT}`, true],
      ['/v1/usage', '/v1/usage', true],
      ['/v1/openapi.json', '/v1/openapi.json', false],
    ]
    for (const [path, url, keyed] of calls) {
      const res = await fetch(`${h.halyard.origin}${url}`, { headers: keyed ? { 'x-api-key': key } : {} })
      await res.arrayBuffer()
      expect(res.status, url).toBe(200)
      const documented = doc.paths[path]?.get?.responses['200']?.headers ?? {}
      expect(Object.keys(documented).length, `${path}: no headers documented`).toBeGreaterThan(0)
      for (const [name, header] of Object.entries(documented)) {
        const value = res.headers.get(name)
        if (header.required) expect(value, `${url}: ${name} documented as always sent`).not.toBeNull()
        if (value !== null) expect(fits(value, header), `${url}: ${name}: ${value}`).toBe(true)
      }
      // Ours (Halyard-…, rate limits, request id) that the answer carries are all documented.
      const names = new Set(Object.keys(documented).map((n) => n.toLowerCase()))
      for (const [name] of res.headers)
        if (/^(halyard-|x-ratelimit-|x-request-id$)/.test(name))
          expect(names.has(name), `${url}: ${name} sent but not documented`).toBe(true)
    }
  })
})
