import { z } from 'zod'
import { ERROR_STATUS, type ErrorCode } from '../errors.ts'
import type { DeclaredRoute } from '../http/pipeline.ts'
import type { RouteMeta } from '../http/route-meta.ts'
import { errorResponses, errorsFor, successHeaders } from './responses.ts'

/**
 * The OpenAPI 3.1 document, generated from what every route declares (http/route.ts): its
 * input schemas (the same zod schemas the gate parses with), scope, compute units, network
 * binding and success bodies. Nothing here is written per route, so a new route or field is
 * documented the day it is declared.
 */

export type JsonSchema = Record<string, unknown>

/** The body of every error response. */
export const errorBodySchema = z.object({
  error: z
    .object({
      code: z
        .enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]])
        .describe('Stable: branch on it (docs/concepts.md)'),
      message: z
        .string()
        .describe('Names the parameter or limit at fault')
        .meta({ example: 'limit must be an integer between 1 and 100 (got 500)' }),
      status: z.number().int().describe('Equals the HTTP status').meta({ example: 400 }),
    })
    .describe('What went wrong'),
})

/**
 * Which declared routes are the API: everything under /v1 and the operator probes. Not the
 * loopback admin API (the CLI's, behind its own token) nor HTML pages (/dashboard), nor the
 * `//{method}` twins of the Alchemy NFT routes (what alchemy-sdk sends for a url ending in `/`).
 */
export function isDocumented(url: string): boolean {
  if (url.includes('//')) return false
  return url.startsWith('/v1/') || url === '/health' || url === '/ready' || url === '/metrics'
}

/** A zod schema as JSON Schema 2020-12 (OpenAPI 3.1's dialect); what JSON cannot say (a custom check) is `{}`. */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema
  delete out.$schema
  const defs = out.$defs as Record<string, unknown> | undefined
  if (!defs) return out
  delete out.$defs
  return inlineDefs(out, defs, []) as JsonSchema
}

/**
 * Replaces `#/$defs/X` references (zod makes them for schemas with a `.meta({ id })`) by the
 * definition: inside an OpenAPI document `#` is the document, not the schema. A definition that
 * contains itself (a recursive schema) is left as `{}` where it recurs.
 */
function inlineDefs(v: unknown, defs: Record<string, unknown>, seen: readonly string[]): unknown {
  if (Array.isArray(v)) return v.map((x) => inlineDefs(x, defs, seen))
  if (typeof v !== 'object' || v === null) return v
  const o = v as Record<string, unknown>
  const ref = typeof o.$ref === 'string' ? /^#\/\$defs\/(.+)$/.exec(o.$ref)?.[1] : undefined
  if (ref !== undefined) {
    if (seen.includes(ref) || defs[ref] === undefined) return {}
    const { $ref: _, ...rest } = o
    return { ...(inlineDefs(defs[ref], defs, [...seen, ref]) as object), ...rest }
  }
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, inlineDefs(x, defs, seen)]))
}

/**
 * JSON-RPC routes (the ones that charge per call: cost 'self') declare their body as "some
 * object" and check each call's envelope themselves (rpc/envelope.ts), so JSON Schema cannot
 * be derived from it. The document shows the JSON-RPC 2.0 envelope instead.
 */
const RPC_ID = { type: ['string', 'integer', 'null'], example: 1 }

const JSONRPC_SCHEMAS = {
  JsonRpcRequest: {
    type: 'object',
    required: ['jsonrpc', 'method'],
    properties: {
      jsonrpc: { const: '2.0', description: 'Always "2.0"' },
      id: { ...RPC_ID, description: 'Echoed in the answer; absent for a notification' },
      method: {
        type: 'string',
        description: 'The method (GET /v1/openrpc.json lists them)',
        example: 'eth_blockNumber',
      },
      params: {
        type: ['array', 'object'],
        description: 'The parameters, by position or by name',
        example: [],
      },
    },
  },
  JsonRpcResponse: {
    type: 'object',
    required: ['jsonrpc', 'id'],
    properties: {
      jsonrpc: { const: '2.0', description: 'Always "2.0"' },
      id: { ...RPC_ID, description: "The request's id" },
      result: { description: 'The answer, when the call succeeded', example: '0x1' },
      error: {
        type: 'object',
        description: 'Why the call failed (instead of result)',
        required: ['code', 'message'],
        properties: {
          code: { type: 'integer', description: 'The JSON-RPC error code', example: -32602 },
          message: { type: 'string', description: 'What went wrong', example: 'invalid params' },
          data: { description: 'More about the error, when there is more' },
        },
      },
    },
  },
}

const oneOrBatch = (name: string) => ({
  oneOf: [
    { $ref: `#/components/schemas/${name}` },
    { type: 'array', minItems: 1, items: { $ref: `#/components/schemas/${name}` } },
  ],
})

interface Parameter {
  name: string
  in: 'path' | 'query'
  required: boolean
  description?: string
  example?: unknown
  schema: JsonSchema
}

/** The fields of an object schema, each with whether it may be absent. */
function fieldsOf(schema: z.ZodType | undefined): [string, z.ZodType, boolean][] {
  if (!(schema instanceof z.ZodObject)) return []
  return Object.entries(schema.shape as Record<string, z.ZodType>).map(([name, s]) => [
    name,
    s,
    s._zod.optin === 'optional',
  ])
}

/**
 * A parameter from its zod schema: the schema's description and example move up to the
 * parameter, where documentation tools look for them. An enum's first value is its example.
 */
function parameter(
  name: string,
  where: 'path' | 'query',
  required: boolean,
  s: z.ZodType | undefined,
): Parameter {
  const schema = s ? jsonSchema(s, 'input') : { type: 'string' }
  const p: Parameter = { name, in: where, required, schema }
  if (typeof schema.description === 'string') p.description = schema.description
  const example =
    schema.example ??
    (Array.isArray(schema.examples) ? schema.examples[0] : undefined) ??
    (Array.isArray(schema.enum) ? schema.enum[0] : undefined)
  if (example !== undefined) p.example = example
  return p
}

function parameters(url: string, meta: RouteMeta): Parameter[] {
  const params: Parameter[] = []
  const pathFields = new Map(fieldsOf(meta.schema.params).map(([n, s]) => [n, s]))
  for (const [, name] of url.matchAll(/:([A-Za-z_]+)/g))
    params.push(parameter(name!, 'path', true, pathFields.get(name!)))
  for (const [name, s, optional] of fieldsOf(meta.schema.query))
    params.push(parameter(name, 'query', !optional, s))
  if (meta.keyInQuery)
    params.push({
      name: 'apiKey',
      in: 'query',
      required: false,
      description: 'The API key, for clients that cannot set headers (WebSocket upgrades only)',
      example: 'hk_live_your_key',
      schema: { type: 'string' },
    })
  return params
}

/** `/v1/webhooks/:id` → `/v1/webhooks/{id}`. */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z_]+)/g, '{$1}')
}

function operationId(method: string, url: string): string {
  const words = url
    .split('/')
    .filter((s) => s !== '' && s !== 'v1')
    .map((s) => (s.startsWith(':') ? `by_${s.slice(1)}` : s.replace(/[^A-Za-z0-9]+/g, '_')))
  return [method.toLowerCase(), ...words].join('_')
}

function tagOf(url: string): string {
  const parts = url.split('/').filter(Boolean)
  return parts[0] === 'v1' ? (parts[1] ?? 'v1') : 'operations'
}

const ANY_JSON = {
  description: 'Success',
  content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } },
}

const isJsonRpc = (meta: RouteMeta) => meta.access !== 'public' && meta.access.cost === 'self'

function successResponses(method: string, url: string, meta: RouteMeta): Record<string, unknown> {
  const declared = Object.entries(meta.responses)
  if (declared.length > 0) {
    return Object.fromEntries(
      declared.map(([status, schema]) => [
        status,
        {
          description: status === '201' ? 'Created' : 'Success',
          headers: successHeaders(meta),
          content: { 'application/json': { schema: jsonSchema(schema as z.ZodType, 'output') } },
        },
      ]),
    )
  }
  if (url === '/metrics')
    return {
      '200': {
        description: 'Prometheus text format',
        content: { 'text/plain': { schema: { type: 'string' } } },
      },
    }
  if (isJsonRpc(meta))
    return {
      '200': {
        description: 'JSON-RPC answer (a method-level error is a 200 with a JSON-RPC error object)',
        content: { 'application/json': { schema: oneOrBatch('JsonRpcResponse') } },
      },
    }
  if (meta.websocket && method === 'GET')
    return { '101': { description: 'Switching Protocols: a WebSocket speaking JSON-RPC 2.0' } }
  // Not declared: some JSON object (src/openapi's test keeps documented routes from landing here).
  return { '2XX': ANY_JSON }
}

function operation(method: string, url: string, meta: RouteMeta): Record<string, unknown> {
  const params = parameters(url, meta)
  const op: Record<string, unknown> = {
    operationId: operationId(method, url),
    summary: meta.summary ?? meta.what,
    tags: [tagOf(url)],
  }
  if (meta.description !== undefined) op.description = meta.description
  if (meta.access === 'public') op.security = []
  else {
    op.security = [
      { ApiKeyHeader: [] },
      { BearerAuth: [] },
      ...(meta.keyInQuery ? [{ ApiKeyQuery: [] }] : []),
    ]
    const scope = meta.access.scope
    op['x-halyard-scope'] = scope === 'any-key' ? 'any' : typeof scope === 'string' ? [scope] : [...scope]
    op['x-halyard-compute-units'] = meta.access.cost === 'self' ? 'per JSON-RPC call' : meta.access.cost
  }
  if (params.length > 0) op.parameters = params
  if (isJsonRpc(meta))
    op.requestBody = {
      required: true,
      description: 'A JSON-RPC 2.0 request object, or a batch array of them',
      content: { 'application/json': { schema: oneOrBatch('JsonRpcRequest') } },
    }
  else if (meta.schema.body)
    op.requestBody = {
      required: true,
      content: { 'application/json': { schema: jsonSchema(meta.schema.body, 'input') } },
    }
  op.responses = {
    ...successResponses(method, url, meta),
    ...errorsFor(
      meta,
      params.some((p) => p.in === 'path'),
    ),
  }
  return op
}

/** The whole document for these routes (HEAD twins and undocumented routes are left out). */
export function buildOpenApi(routes: readonly DeclaredRoute[]): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const r of routes) {
    if (r.method === 'HEAD' || !isDocumented(r.url)) continue
    const path = openApiPath(r.url)
    paths[path] ??= {}
    paths[path][r.method.toLowerCase()] = operation(r.method, r.url, r.meta)
  }
  const sorted = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'Halyard API',
      version: 'v1',
      description:
        'Self-hosted blockchain infrastructure: JSON-RPC gateway, data APIs, smart wallets, gas, bundler, webhooks. Generated from the zod schemas the routes validate with.',
    },
    servers: [{ url: '/' }],
    paths: sorted,
    components: {
      schemas: { Error: jsonSchema(errorBodySchema, 'output'), ...JSONRPC_SCHEMAS },
      responses: errorResponses(),
      securitySchemes: {
        ApiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        BearerAuth: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API key>' },
        ApiKeyQuery: { type: 'apiKey', in: 'query', name: 'apiKey', description: 'WebSocket upgrades only' },
      },
    },
  }
}
