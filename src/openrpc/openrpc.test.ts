import jsonSchemaMeta from '@json-schema-tools/meta-schema'
import metaSchema from '@open-rpc/meta-schema'
import { Ajv, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { openTestPGlite } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { evmFamilies, evmRows } from '../rpc/methods/evm.ts'
import { createRegistry, registries } from '../rpc/methods/registry.ts'
import { m } from '../rpc/methods/row.ts'
import type { MethodRegistry } from '../rpc/methods/spec.ts'
import { declaredSurfaces } from '../rpc/surfaces.ts'
import type { Storage } from '../storage/database.ts'
import { buildOpenRpc } from './document.ts'

type Surface = {
  surface: string
  path: string
  scope: string
  computeUnits: number
  computeUnitsPastBlock?: number
  access: string
}
type Method = {
  name: string
  tags: { name: string }[]
  params: { name: string; required: boolean; schema: unknown }[]
  'x-halyard-surfaces': Surface[]
  'x-halyard-scope': string | string[]
  'x-halyard-compute-units': number | number[]
}
type Doc = {
  openrpc: string
  servers: { name: string; url: string }[]
  methods: Method[]
  'x-halyard-refused-methods': { name: string; surface: string; reason: string }[]
  'x-halyard-method-families': { surface: string; pattern: string }[]
}

let anvil: AnvilProcess
let storage: Storage
let h: TestHalyard
let doc: Doc
let validate: ValidateFunction

beforeAll(async () => {
  anvil = await startAnvil()
  storage = await openTestPGlite()
  h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage })
  // Public, as /v1/openapi.json: no key.
  const res = await fetch(`${h.halyard.origin}/v1/openrpc.json`)
  expect(res.status).toBe(200)
  doc = (await res.json()) as Doc
  // OpenRPC's meta-schema (draft-07 under its own $schema URL) and the JSON Schema meta-schema
  // it refers to for every schema in the document; formats (uri) are checked too.
  const strip = (s: object) => {
    const { $schema: _, ...rest } = s as Record<string, unknown>
    return rest
  }
  const ajv = new Ajv({ strict: false, allErrors: true })
  addFormats.default(ajv)
  // Referred to both with and without the trailing slash of its $id.
  ajv.addSchema(strip(jsonSchemaMeta))
  ajv.addSchema({ ...strip(jsonSchemaMeta), $id: 'https://meta.json-schema.tools' })
  validate = ajv.compile(strip(metaSchema))
})
afterAll(async () => {
  await h?.close()
  await storage?.close()
  await anvil?.stop()
})

const method = (name: string) => doc.methods.find((x) => x.name === name)
const on = (name: string, surface: string) =>
  method(name)?.['x-halyard-surfaces'].find((s) => s.surface === surface)

describe('GET /v1/openrpc.json', () => {
  it('is valid against the OpenRPC meta-schema, which refuses a broken document', () => {
    expect(validate(doc), JSON.stringify(validate.errors?.slice(0, 5))).toBe(true)
    expect(doc.openrpc).toBe('1.3.2')
    // The validator is not a pass-through: a method without params, or an unknown field, fails.
    const { params: _, ...noParams } = doc.methods[0]!
    expect(validate({ ...doc, methods: [noParams] })).toBe(false)
    expect(validate({ ...doc, methods: [{ ...doc.methods[0], cost: 1 }] })).toBe(false)
    expect(validate({ ...doc, servers: [{ name: 'x', url: '/relative' }] })).toBe(false)
    const names = doc.methods.map((x) => x.name)
    expect(new Set(names).size, 'method names are unique').toBe(names.length)
  })

  it('lists every row of the EVM and Solana registries on /v1/rpc, with its scope and CU', () => {
    for (const [kind, registry] of Object.entries(registries)) {
      let listed = 0
      for (const spec of registry.specs()) {
        if (spec.refusal !== undefined) {
          expect(
            doc['x-halyard-refused-methods'].some((r) => r.name === spec.name && r.surface === `rpc-${kind}`),
            spec.name,
          ).toBe(true)
          expect(on(spec.name, `rpc-${kind}`), spec.name).toBeUndefined()
          continue
        }
        const s = on(spec.name, `rpc-${kind}`)
        expect(s, `${spec.name} on rpc-${kind}`).toBeDefined()
        expect(s!.scope).toBe(spec.scope)
        expect(s!.computeUnits).toBe(spec.cost([]))
        expect(s!.path).toBe('/v1/rpc/{chain}/{network}')
        expect(method(spec.name)!.tags.map((t) => t.name)).toContain(`rpc-${kind}`)
        listed++
      }
      expect(listed).toBeGreaterThan(40)
    }
    // A read pinned to a past block costs more, and says so.
    expect(on('eth_getBalance', 'rpc-evm')).toMatchObject({ computeUnits: 2, computeUnitsPastBlock: 20 })
    expect(on('sendTransaction', 'rpc-solana')).toMatchObject({ scope: 'rpc:write', access: 'write' })
    // Names a family is known to serve are listed, with its gate; the families themselves too.
    expect(method('debug_traceTransaction')).toBeDefined()
    expect(on('anvil_reset', 'rpc-evm')).toMatchObject({ scope: 'rpc:write', computeUnits: 20 })
    expect(doc['x-halyard-method-families'].filter((f) => f.surface === 'rpc-evm').length).toBe(
      evmFamilies.length,
    )
  })

  it('lists the bundler, the paymaster and the Alchemy-compatible root, one entry per name', () => {
    expect(on('eth_sendUserOperation', 'bundler')).toMatchObject({
      scope: 'bundler:send',
      computeUnits: 10,
      access: 'write',
      path: '/v1/bundler/{chain}/{network}',
    })
    expect(on('debug_bundler_dumpMempool', 'bundler')).toMatchObject({ access: 'operator' })
    // eth_chainId is served by /v1/rpc and the bundler with different scopes: one method, both surfaces.
    const chainId = method('eth_chainId')!
    expect(chainId['x-halyard-surfaces'].map((s) => s.surface)).toEqual(
      expect.arrayContaining(['rpc-evm', 'bundler', 'alchemy']),
    )
    expect(chainId['x-halyard-scope']).toEqual(expect.arrayContaining(['rpc:read', 'bundler:send']))
    // This server has no paymaster signer: the paymaster's rows are listed as refused, saying why.
    for (const name of ['pm_getPaymasterStubData', 'pm_getPaymasterData'])
      expect(
        doc['x-halyard-refused-methods'].some((r) => r.name === name && r.surface === 'paymaster'),
        name,
      ).toBe(true)
    // Rows that check their params with a tuple are documented from it.
    const balances = method('alchemy_getTokenBalances')!
    expect(on('alchemy_getTokenBalances', 'alchemy')).toMatchObject({ scope: 'data:read', computeUnits: 20 })
    expect(balances.params.map((p) => p.required)).toEqual([true, false, false])
    expect(doc.servers.map((s) => s.name).sort()).toEqual(
      ['alchemy', 'bundler', 'paymaster', 'rpc-evm', 'rpc-solana'].sort(),
    )
    const rpc = doc.servers.find((s) => s.name === 'rpc-evm')!
    expect(rpc.url).toBe(`${h.halyard.origin}/v1/rpc/ethereum/devnet`)
  })

  it('lists what the server answers: a listed read is served, a refused name is -32601', async () => {
    const key = await h.createKey({ plan: 'enterprise' })
    const call = async (name: string) => {
      const res = await fetch(doc.servers.find((s) => s.name === 'rpc-evm')!.url, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: name, params: [] }),
      })
      return (await res.json()) as { result?: unknown; error?: { code: number } }
    }
    expect((await call('eth_blockNumber')).result).toMatch(/^0x/)
    const refused = doc['x-halyard-refused-methods'].filter((r) => r.surface === 'rpc-evm')
    expect(refused.length).toBeGreaterThan(0)
    for (const r of refused) expect((await call(r.name)).error?.code, r.name).toBe(-32601)
  })
})

describe('buildOpenRpc', () => {
  it('documents a method the day a row is added to a registry', () => {
    const surfaces = declaredSurfaces(h.halyard.app)
    const rpc = surfaces.find((s) => s.url === '/v1/rpc/:chain/:network')!
    const withRow = (registry: MethodRegistry) =>
      buildOpenRpc({
        surfaces: [{ ...rpc, kinds: ['evm'], registry }],
        networks: h.halyard.ctx.networks.all(),
        origin: 'http://127.0.0.1:1',
      }) as unknown as Doc
    const before = withRow(createRegistry(evmRows, evmFamilies))
    expect(before.methods.some((x) => x.name === 'eth_halyardProbe')).toBe(false)
    const after = withRow(createRegistry([...evmRows, m('eth_halyardProbe', 7, { scope: 'rpc:write' })]))
    const added = after.methods.find((x) => x.name === 'eth_halyardProbe')
    expect(added?.['x-halyard-surfaces']).toEqual([
      expect.objectContaining({ surface: 'rpc', scope: 'rpc:write', computeUnits: 7, access: 'write' }),
    ])
    expect(validate(after), JSON.stringify(validate.errors?.slice(0, 3))).toBe(true)
  })
})
