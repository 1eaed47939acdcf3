import { z } from 'zod'
import type { DB } from '../storage/database.ts'
import { findRequests, keyNames, type RequestFilter, type StoredRequest } from './store.ts'

/** Rows one read returns at most. */
export const MAX_LIMIT = 200
export const DEFAULT_LIMIT = 50

const text = (name: string, max: number) =>
  z
    .string()
    .max(max, { error: `${name}: must be at most ${max} characters` })
    .refine((v) => !v.includes('\u0000'), { error: `${name}: must not contain a NUL character` })

const time = (name: string) =>
  z
    .string()
    .max(40)
    .refine((v) => v === '' || !Number.isNaN(Date.parse(v)), {
      error: `${name}: must be a time such as 2026-01-31T12:00:00Z`,
    })

/** The explorer's filters as a query string (GET /v1/requests and the dashboard page share it). */
export const requestQuery = z.object({
  key: text('key', 100)
    .optional()
    .describe('A key id (key_…): only its requests')
    .meta({ example: 'key_0123456789abcdef01234567' }),
  method: text('method', 128).optional().describe('A JSON-RPC method name').meta({ example: 'eth_call' }),
  status: z
    .string()
    .regex(/^(|ok|error|[1-5]\d\d|-?\d{1,9})$/, {
      error: 'status: must be ok, error, an HTTP status (429) or a JSON-RPC error code (-32601)',
    })
    .optional()
    .describe('ok, error, an HTTP status or a JSON-RPC error code')
    .meta({ example: 'error' }),
  network: text('network', 100)
    .optional()
    .describe('A network slug, e.g. ethereum-mainnet')
    .meta({ example: 'ethereum-devnet' }),
  request_id: text('request_id', 64)
    .optional()
    .describe('The X-Request-Id of the request')
    .meta({ example: '0f6c2a8e-3b1d-4c55-9a7e-2d4b8f1e6a90' }),
  from: time('from')
    .optional()
    .describe('Earliest time (included), ISO 8601')
    .meta({ example: '2026-01-31T00:00:00Z' }),
  to: time('to')
    .optional()
    .describe('Latest time (excluded), ISO 8601')
    .meta({ example: '2026-02-01T00:00:00Z' }),
  limit: z.coerce
    .number({ error: 'limit: must be a number' })
    .int({ error: 'limit: must be a whole number' })
    .min(1, { error: 'limit: must be at least 1' })
    .max(MAX_LIMIT, { error: `limit: must be at most ${MAX_LIMIT}` })
    .optional()
    .meta({
      description: `Requests to answer, from 1 to ${MAX_LIMIT}; ${DEFAULT_LIMIT} when absent`,
      example: 50,
    }),
})

export type RequestQuery = z.infer<typeof requestQuery>

/** A query's filter ('' fields are no filter: an HTML form sends every field). */
export function filterOf(q: RequestQuery, networks?: readonly string[]): RequestFilter {
  const v = (s: string | undefined) => (s === undefined || s.trim() === '' ? undefined : s.trim())
  const t = (s: string | undefined) => (v(s) === undefined ? undefined : new Date(s as string))
  return {
    keyId: v(q.key),
    method: v(q.method),
    status: v(q.status),
    network: v(q.network),
    requestId: v(q.request_id),
    from: t(q.from),
    to: t(q.to),
    networks,
  }
}

/** A recorded call as the API and the dashboard show it. */
export interface RequestView {
  readonly at: string
  readonly key: { readonly id: string; readonly name: string | null; readonly prefix: string | null }
  readonly surface: string
  readonly network: string
  readonly request_id: string
  /** Place in its batch; null for a single call. */
  readonly batch_item: number | null
  readonly batch_size: number | null
  readonly method: string
  readonly http_status: number
  readonly rpc_code: number | null
  readonly error: string | null
  readonly latency_ms: number
  readonly compute_units: number
  readonly origin: string | null
  readonly params: string | null
  readonly answer: string | null
}

/** An account's recorded calls matching `filter`, newest first, with their keys' names. */
export async function listRequests(
  db: DB,
  accountId: string,
  filter: RequestFilter,
  limit = DEFAULT_LIMIT,
): Promise<RequestView[]> {
  const [rows, names] = await Promise.all([
    findRequests(db, accountId, filter, limit),
    keyNames(db, accountId),
  ])
  return rows.map((r) => view(r, names.get(r.key_id)))
}

export function view(
  r: StoredRequest,
  key: { name: string | null; prefix: string } | undefined,
): RequestView {
  return {
    at: r.at.toISOString(),
    key: { id: r.key_id, name: key?.name ?? null, prefix: key?.prefix ?? null },
    surface: r.surface,
    network: r.network,
    request_id: r.request_id,
    batch_item: r.batch_size > 0 ? r.item : null,
    batch_size: r.batch_size > 0 ? r.batch_size : null,
    method: r.method,
    http_status: r.http_status,
    rpc_code: r.rpc_code,
    error: r.error,
    latency_ms: r.latency_us / 1000,
    compute_units: r.compute_units,
    origin: r.origin,
    params: r.params,
    answer: r.answer,
  }
}
