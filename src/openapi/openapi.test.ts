import SwaggerParser from '@apidevtools/swagger-parser'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { openTestPGlite } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, type DemoContracts, deployDemo } from '../devnet/demo.ts'
import { PolicyStore } from '../gas/policy-store.ts'
import { declaredRoutes } from '../http/pipeline.ts'
import type { Storage } from '../storage/database.ts'
import { encryptSecret, generateSigningSecret } from '../webhooks/crypto.ts'
import { insertWebhook } from '../webhooks/store.ts'
import { auditOpenApi } from './audit.ts'
import { isDocumented, type JsonSchema, openApiPath } from './document.ts'

type Operation = {
  operationId: string
  summary?: string
  description?: string
  security: Record<string, string[]>[]
  parameters?: { name: string; in: string; required: boolean; schema: JsonSchema }[]
  requestBody?: { content: Record<string, { schema: JsonSchema }> }
  responses: Record<string, { $ref?: string; content?: Record<string, { schema: JsonSchema }> }>
}
type Doc = {
  openapi: string
  info: { title: string; version: string }
  paths: Record<string, Record<string, Operation>>
  components: {
    schemas: Record<string, JsonSchema>
    responses: Record<string, { content: Record<string, { schema: JsonSchema }> }>
    securitySchemes: Record<string, { type: string }>
  }
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

/** Follows a local `$ref` (`#/components/…`) in the document. */
function deref<T>(doc: Doc, v: T & { $ref?: string }): T {
  if (!v.$ref) return v
  let cur: unknown = doc
  for (const part of v.$ref.replace(/^#\//, '').split('/')) cur = (cur as Record<string, unknown>)[part]
  if (cur === undefined) throw new Error(`unresolved $ref ${v.$ref}`)
  return cur as T
}

/** The documented response for a status: exact, then its range (2XX), then default. */
function documentedResponse(op: Operation, status: number) {
  return op.responses[String(status)] ?? op.responses[`${String(status)[0]}XX`] ?? op.responses.default
}

/**
 * A value for a path parameter: a seeded one (the demo contracts, anvil's funded account), else
 * the schema's example; routes then answer 200 where the seed exists and 404 elsewhere.
 */
function pathValue(path: string, name: string, schema: JsonSchema): string {
  if (name === 'contract') return path.startsWith('/v1/nfts/') ? demo.nft : demo.usd
  if (name === 'token_id') return '1'
  if (name === 'id' && path.startsWith('/v1/gas/policies/')) return policyId
  if (name === 'id' && path.startsWith('/v1/webhooks/')) return webhookId
  if (name === 'address' && !path.startsWith('/v1/wallets/')) return DEV_ACCOUNT
  return exampleOf(schema)
}

/** An example for a parameter: its schema's example, else a placeholder the route will refuse or not find. */
function exampleOf(schema: JsonSchema): string {
  if (typeof schema.example === 'string') return schema.example
  if (Array.isArray(schema.examples) && typeof schema.examples[0] === 'string') return schema.examples[0]
  return 'x'
}

let anvil: AnvilProcess
let demo: DemoContracts
/** A gas policy of the seeded account, so GET /v1/gas/policies/{id} answers 200. */
let policyId: string
/** A webhook of the seeded account with one recorded delivery attempt, for the webhook GETs. */
let webhookId: string
let key: string
let storage: Storage
let h: TestHalyard
let doc: Doc
let ajv: Ajv2020

beforeAll(async () => {
  anvil = await startAnvil()
  // Real tokens and NFTs, so the data routes answer 200 with bodies to check, not only 404s.
  demo = await deployDemo(anvil.url)
  storage = await openTestPGlite()
  h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage })
  const res = await fetch(`${h.halyard.origin}/v1/openapi.json`)
  expect(res.status).toBe(200)
  doc = (await res.json()) as Doc
  // OpenAPI 3.1 schemas are JSON Schema 2020-12; OpenAPI's own keywords (example) are allowed.
  key = await h.createKey({ plan: 'enterprise' })
  // Through the policies' own store: POST /v1/gas/policies needs a chain with sponsorship
  // configured (a paymaster on the devnet), which this walk does not set up.
  const { accountId } = await h.halyard.ctx.auth.authenticate(key)
  policyId = 'gp_0123456789abcdef01234567'
  await new PolicyStore(storage.db).insert({
    id: policyId,
    account_id: accountId,
    name: 'walk',
    chain: 'ethereum-devnet',
    rules: JSON.stringify({ max_per_user_per_day: 5 }),
    status: 'active',
  })
  // Through the webhooks' store: POST /v1/webhooks checks the URL's DNS, which this machine
  // may not have. Paused and matching nothing, so no delivery is ever attempted.
  webhookId = 'wh_0123456789abcdef01234567'
  await insertWebhook(
    storage.db,
    {
      id: webhookId,
      account_id: accountId,
      notify_email: null,
      url: 'https://receiver.example/hook',
      chain: 'ethereum-devnet',
      event_type: 'address_activity',
      config: JSON.stringify({ addresses: [DEV_ACCOUNT.toLowerCase()] }),
      secret_enc: encryptSecret(generateSigningSecret(), h.halyard.ctx.secretKey),
      status: 'paused',
    },
    [],
  )
  await storage.db
    .insertInto('webhook_attempts')
    .values({
      event_id: 'evt_0123456789abcdef01234567',
      webhook_id: webhookId,
      attempt: 1,
      status_code: 503,
      error: 'receiver answered 503',
      duration_ms: 12,
    })
    .execute()
  ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false })
  ajv.addSchema({ $id: 'openapi.json', ...doc.components })
})
afterAll(async () => {
  await h?.close()
  await storage?.close()
  await anvil?.stop()
})

/** A schema from the document, compiled with the document's components reachable by $ref. */
function compile(schema: JsonSchema) {
  const text = JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/')
  return ajv.compile(JSON.parse(text) as JsonSchema)
}

describe('GET /v1/openapi.json', () => {
  it('is an OpenAPI 3.1 document', () => {
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info.title).toBeTruthy()
    expect(doc.info.version).toBeTruthy()
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual([
      'ApiKeyHeader',
      'ApiKeyQuery',
      'BearerAuth',
    ])
    const ids = new Set<string>()
    for (const [path, item] of Object.entries(doc.paths)) {
      expect(path.startsWith('/'), path).toBe(true)
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1])
      for (const [method, op] of Object.entries(item)) {
        const where = `${method.toUpperCase()} ${path}`
        expect(METHODS, where).toContain(method)
        expect(ids.has(op.operationId), `${where}: operationId ${op.operationId} used twice`).toBe(false)
        ids.add(op.operationId)
        // Every template variable has exactly one required path parameter, and no other exists.
        const pathParams = (op.parameters ?? []).filter((p) => p.in === 'path')
        expect(pathParams.map((p) => p.name).sort(), where).toEqual([...templated].sort())
        expect(
          pathParams.every((p) => p.required),
          where,
        ).toBe(true)
        expect(Object.keys(op.responses).length, where).toBeGreaterThan(0)
        for (const [status, r] of Object.entries(op.responses)) {
          expect(/^([1-5](\d\d|XX)|default)$/.test(status), `${where}: status ${status}`).toBe(true)
          const response = deref(doc, r)
          for (const media of Object.values(response.content ?? {})) compile(media.schema)
        }
        for (const p of op.parameters ?? []) compile(p.schema)
        for (const media of Object.values(op.requestBody?.content ?? {})) compile(media.schema)
        // Keyed operations name both key schemes; public ones none.
        for (const s of op.security.flatMap((x) => Object.keys(x)))
          expect(doc.components.securitySchemes[s], where).toBeDefined()
      }
    }
  })

  it('passes a real OpenAPI 3.1 validator', async () => {
    // swagger-parser validates against the OpenAPI 3.1 schema and resolves every $ref; it
    // throws on the first error (it has no warnings). A copy: validate() dereferences in place.
    const api = await SwaggerParser.validate(structuredClone(doc) as never)
    expect((api as { openapi: string }).openapi).toBe('3.1.0')
    // It is not a pass-through: a parameter in a place OpenAPI 3 does not have is refused.
    const broken = structuredClone(doc)
    broken.paths['/v1/usage']!.get!.parameters = [
      { name: 'x', in: 'body', required: true, schema: { type: 'string' } },
    ]
    await expect(SwaggerParser.validate(broken as never)).rejects.toThrow()
  })

  it('gives every operation a summary, a description, typed numbers and filled bodies', () => {
    const missing: string[] = []
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const where = `${method.toUpperCase()} ${path}`
        // Routes declare `summary` and `description` next to their handler (http/route.ts).
        if (!op.summary?.trim() || !op.description?.trim() || op.description === op.summary)
          missing.push(where)
        for (const p of op.parameters ?? [])
          if (p.name === 'page' || p.name === 'limit')
            expect(p.schema.type, `${where} ${p.name}`).toBe('integer')
        for (const [status, r] of Object.entries(op.responses)) {
          const response = deref(doc, r)
          for (const media of Object.values(response.content ?? {}))
            expect(Object.keys(media.schema).length, `${where} ${status}: empty schema`).toBeGreaterThan(0)
          // Every error response carries the error body.
          if (/^[45]/.test(status))
            expect(response.content?.['application/json']?.schema, `${where} ${status}`).toEqual({
              $ref: '#/components/schemas/Error',
            })
        }
      }
    }
    expect(missing, 'operations without a summary and description').toEqual([])
  })

  it('explains every parameter and field: a description, and an example of every scalar', () => {
    const audit = auditOpenApi(doc)
    expect(audit.missing, 'parameters and fields without words').toEqual([])
    expect(audit.parameters.total).toBeGreaterThan(50)
    expect(audit.fields.total).toBeGreaterThan(300)
    expect(audit.responseFields.total).toBeGreaterThan(300)
    // An example shows the wire format: one its own schema refuses would teach the wrong one.
    const wrong = audit.examples.filter((e) => !compile(e.schema)(e.example)).map((e) => e.at)
    expect(wrong, 'examples their own schema refuses').toEqual([])
    // The walk sees into bodies: a field stripped of its description is named.
    const stripped = structuredClone(doc)
    const body = stripped.paths['/v1/webhooks']!.post!.requestBody!.content['application/json']!.schema
    delete (body.properties as Record<string, JsonSchema>).url!.description
    delete (body.properties as Record<string, JsonSchema>).url!.example
    // And into responses, through arrays and nullable unions; a mistyped example is caught.
    const json = (path: string) => stripped.paths[path]!.get!.responses['200']!.content!['application/json']!
    const transfer = (json('/v1/transfers/{chain}/{address}').schema.properties as Record<string, JsonSchema>)
      .transfers!.items as { properties: Record<string, JsonSchema> }
    delete transfer.properties.tx_index!.example
    const account = (
      json('/v1/usage').schema.properties as Record<string, { properties: Record<string, JsonSchema> }>
    ).account!
    account.properties.email!.example = 7
    const again = auditOpenApi(stripped)
    expect(again.missing).toEqual([
      'GET /v1/transfers/{chain}/{address} 200 application/json.transfers[].tx_index: no example',
      'POST /v1/webhooks request application/json.url: no description',
      'POST /v1/webhooks request application/json.url: no example',
    ])
    expect(again.examples.filter((e) => !compile(e.schema)(e.example)).map((e) => e.at)).toEqual([
      'GET /v1/usage 200 application/json.account.email',
    ])
  })

  it('covers every route the API serves, with its errors', () => {
    const declared = declaredRoutes(h.halyard.app).filter((r) => r.method !== 'HEAD' && isDocumented(r.url))
    expect(declared.length).toBeGreaterThan(20)
    for (const r of declared) {
      const op = doc.paths[openApiPath(r.url)]?.[r.method.toLowerCase()]
      expect(op, `${r.method} ${r.url}`).toBeDefined()
      expect(op!.responses['500'], `${r.method} ${r.url}`).toBeDefined()
      if (r.meta.access !== 'public') {
        for (const s of ['401', '403', '429'])
          expect(op!.responses[s], `${r.method} ${r.url}: ${s}`).toBeDefined()
        expect(op!.security).toEqual(expect.arrayContaining([{ ApiKeyHeader: [] }, { BearerAuth: [] }]))
      } else expect(op!.security).toEqual([])
    }
    // Not the API: the operator's loopback admin API.
    expect(Object.keys(doc.paths).some((p) => p.startsWith('/admin'))).toBe(false)
  })

  it('declares bodies that a wrong shape fails', () => {
    const usage = doc.paths['/v1/usage']!.get!.responses['200']!.content!['application/json']!.schema
    expect(compile(usage)({})).toBe(false)
    expect(compile(usage)({ account: 1 })).toBe(false)
  })

  it('documents JSON-RPC routes with the JSON-RPC envelope, and answers in it', async () => {
    const op = doc.paths['/v1/rpc/{chain}/{network}']!.post!
    const request = compile(op.requestBody!.content['application/json']!.schema)
    const response = compile(op.responses['200']!.content!['application/json']!.schema)
    const key = await h.createKey({ plan: 'enterprise' })
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'eth_chainId', params: [] })
    for (const body of [call(1), [call(1), call(2)]]) {
      expect(request(body), ajv.errorsText(request.errors)).toBe(true)
      const res = await fetch(`${h.halyard.origin}/v1/rpc/ethereum/devnet`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      expect(res.status).toBe(200)
      expect(response(await res.json()), ajv.errorsText(response.errors)).toBe(true)
    }
  })

  it('documents the error body, with an example per error code that the body schema accepts', () => {
    const validate = compile(doc.components.schemas.Error!)
    for (const [name, r] of Object.entries(doc.components.responses)) {
      const example = (r.content['application/json'] as { example?: { error: { code: string } } }).example
      expect(validate(example), `${name}: ${ajv.errorsText(validate.errors)}`).toBe(true)
      expect(example!.error.code).toBe(name)
    }
    expect(validate({ error: { code: 'not_found', message: 'x', status: 404 } })).toBe(true)
    expect(validate({ error: { code: 'teapot', message: 'x', status: 418 } })).toBe(false)
  })

  it('answers every GET route in the shape it documents', async () => {
    // The seeded key: every scope, on an account without limits (no 403 or 429).
    const checked: string[] = []
    const answered200: string[] = []
    for (const [path, item] of Object.entries(doc.paths)) {
      const op = item.get
      if (!op) continue
      let url = path
      const query = new URLSearchParams()
      for (const p of op.parameters ?? []) {
        if (p.in === 'path')
          url = url.replace(`{${p.name}}`, encodeURIComponent(pathValue(path, p.name, p.schema)))
        else if (p.required) query.set(p.name, exampleOf(p.schema))
      }
      const qs = query.size > 0 ? `?${query}` : ''
      const res = await fetch(`${h.halyard.origin}${url}${qs}`, {
        headers: op.security.length > 0 ? { 'x-api-key': key } : {},
      })
      const where = `GET ${url}${qs} → ${res.status}`
      const documented = documentedResponse(op, res.status)
      expect(documented, `${where}: status not documented`).toBeDefined()
      const response = deref(doc, documented!)
      const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim()
      const media = response.content?.[type]
      expect(media, `${where}: content-type ${type} not documented`).toBeDefined()
      const body = type === 'application/json' ? await res.json() : await res.text()
      const validate = compile(media!.schema)
      expect(
        validate(body),
        `${where}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 400)}`,
      ).toBe(true)
      checked.push(where)
      if (res.status === 200 && media!.schema.type === 'object') answered200.push(path)
    }
    expect(checked.length).toBeGreaterThan(10)
    // Routes that declare their body were answered (200) and checked against it, not only refused.
    for (const path of [
      '/v1/usage',
      '/v1/openapi.json',
      '/v1/tokens/{chain}/balances/{address}',
      '/v1/tokens/{chain}/metadata/{contract}',
      '/v1/nfts/{chain}/metadata/{contract}/{token_id}',
      '/v1/nfts/{chain}/collection/{contract}',
      '/v1/nfts/{chain}/owned/{address}',
      '/v1/gas/{chain}/prices',
      '/v1/wallets',
      '/v1/gas/policies',
      '/v1/gas/policies/{id}',
      '/v1/webhooks',
      '/v1/webhooks/{id}',
      '/v1/webhooks/{id}/deliveries',
    ])
      expect(answered200, path).toContain(path)
  })

  it('answers the webhook writes in the shape they document', async () => {
    // Last in this file: it ends by deleting the seeded webhook the GET walk reads.
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${h.halyard.origin}${path}`, {
        method,
        headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      })
      const template = path.replace(webhookId, '{id}').replace(/evt_[0-9a-f]{24}/, '{event_id}')
      const media = doc.paths[template]?.[method.toLowerCase()]?.responses[String(res.status)]?.content
      expect(media, `${method} ${path} → ${res.status}`).toBeDefined()
      const json: unknown = await res.json()
      const validate = compile(media!['application/json']!.schema)
      expect(validate(json), `${method} ${path}: ${ajv.errorsText(validate.errors)}`).toBe(true)
      return json as Record<string, unknown>
    }
    const wh = `/v1/webhooks/${webhookId}`
    const test = await call('POST', `${wh}/test`)
    expect(test.queued).toBe(false)
    await call('POST', `${wh}/deliveries/${String(test.id)}/redeliver`)
    await call('POST', `${wh}/rotate-secret`)
    await call('PATCH', wh, { config: { addresses: [DEV_ACCOUNT.toLowerCase()] }, format: 'B' })
    expect(await call('DELETE', wh)).toEqual({ id: webhookId, deleted: true })
  })
})
