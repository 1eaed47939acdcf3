import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import type { NetworkRegistry } from '../chains/registry.ts'
import { visibleTo } from '../http/access.ts'
import { defineRoute } from '../http/route.ts'
import type { Storage } from '../storage/database.ts'
import { DEFAULT_LIMIT, filterOf, listRequests, requestQuery } from './service.ts'

const requestView = z.object({
  at: z
    .string()
    .meta({ format: 'date-time' })
    .describe('When the request arrived')
    .meta({ example: '2026-11-26T10:00:00.000Z' }),
  key: z
    .object({
      id: z.string().describe('The key id').meta({ example: 'key_0123456789abcdef01234567' }),
      name: z.string().nullable().describe('The name given to the key').meta({ example: 'backend' }),
      prefix: z
        .string()
        .nullable()
        .describe('The first characters of the key, to recognise it')
        .meta({ example: 'halyard_live_3f9a…' }),
    })
    .describe('The key that sent it'),
  surface: z
    .string()
    .meta({ example: 'JSON-RPC' })
    .describe('Where it came in: JSON-RPC, WebSocket, bundler, …'),
  network: z.string().meta({ example: 'ethereum-mainnet' }).describe('The network slug'),
  request_id: z
    .string()
    .describe('The X-Request-Id answered')
    .meta({ example: '0f6c2a8e-3b1d-4c55-9a7e-2d4b8f1e6a90' }),
  batch_item: z
    .number()
    .int()
    .nullable()
    .describe('Place in its batch; null for a single call')
    .meta({ example: null }),
  batch_size: z
    .number()
    .int()
    .nullable()
    .describe('Calls in its batch; null for a single call')
    .meta({ example: null }),
  method: z.string().describe('The JSON-RPC method').meta({ example: 'eth_call' }),
  http_status: z.number().int().describe('The HTTP status answered').meta({ example: 200 }),
  rpc_code: z
    .number()
    .int()
    .nullable()
    .describe('The JSON-RPC error code; null for a result')
    .meta({ example: null }),
  error: z.string().nullable().describe('The error message; null for a result').meta({ example: null }),
  latency_ms: z.number().describe('The whole request (a batch: the batch)').meta({ example: 42.7 }),
  compute_units: z.number().int().describe('Compute units charged').meta({ example: 26 }),
  origin: z
    .string()
    .nullable()
    .describe('The Origin header of a browser request')
    .meta({ example: 'https://app.example.com' }),
  params: z
    .string()
    .nullable()
    .describe('JSON, secrets redacted, capped (docs/request-explorer.md)')
    .meta({ example: '[{"to":"0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2","data":"0x18160ddd"},"latest"]' }),
  answer: z.string().nullable().describe('The JSON-RPC response object, secrets redacted, capped').meta({
    example:
      '{"jsonrpc":"2.0","id":1,"result":"0x00000000000000000000000000000000000000000000b1a2bc2ec50000000000"}',
  }),
})

/** GET /v1/requests: the caller's account's recorded requests, for scripts (the dashboard shows the same). */
export function registerRequestRoutes(
  app: FastifyInstance,
  storage: Storage,
  networks: NetworkRegistry,
  retentionMs: number,
): void {
  defineRoute(app, {
    method: 'GET',
    url: '/v1/requests',
    summary: "List the account's recorded requests",
    description:
      "The request explorer's data: the account's recent JSON-RPC calls (each batch item on its own) with key, surface, network, method, status or error code, latency, compute units and request id, filterable; params and answers redacted and capped (docs/request-explorer.md).",
    scope: 'any-key',
    cost: 1,
    what: 'request log',
    schema: { query: requestQuery },
    responses: {
      200: z.object({
        retention_hours: z.number().describe('How long requests are kept').meta({ example: 168 }),
        requests: z.array(requestView).describe('Newest first'),
      }),
    },
    handler: async ({ caller, query }) => {
      // A test key sees what happened on networks it may use (no mainnet), as for other objects.
      const viewer = visibleTo(caller, networks)
      const requests = await listRequests(
        storage.db,
        caller.accountId,
        filterOf(query, viewer.networks),
        query.limit ?? DEFAULT_LIMIT,
      )
      return { retention_hours: retentionMs / 3_600_000, requests }
    },
  })
}
