import { z } from 'zod'
import { describeZodError } from '../common/validation.ts'
import type { JsonRpcErrorObject, JsonRpcId, JsonRpcRequest } from '../jsonrpc.ts'

const requestSchema = z.object(
  {
    jsonrpc: z.literal('2.0', { error: 'must be "2.0"' }),
    id: z.union([z.string().max(256), z.number()], { error: 'is required and must be a number or a string' }),
    method: z
      .string({ error: 'is required and must be a string' })
      .min(1, 'must not be empty')
      .max(128, 'is longer than 128 characters'),
    // viem omits `params` for parameterless methods; accept that as [] (Alchemy does too).
    params: z.array(z.unknown(), { error: 'must be an array' }).default([]),
  },
  { error: 'must be a JSON-RPC request object' },
)

export type EnvelopeResult =
  | { ok: true; request: JsonRpcRequest }
  | { ok: false; id: JsonRpcId; message: string }

/** Checks one JSON-RPC request object; on failure the message names the offending field. */
export function parseEnvelope(raw: unknown): EnvelopeResult {
  const fast = wellFormed(raw)
  if (fast) return { ok: true, request: fast }
  const parsed = requestSchema.safeParse(raw)
  if (parsed.success) return { ok: true, request: parsed.data as JsonRpcRequest }
  const rawId = (raw as { id?: unknown } | null)?.id
  const id = typeof rawId === 'string' || typeof rawId === 'number' ? rawId : null
  return { ok: false, id, message: `invalid JSON-RPC request: ${describeZodError(parsed.error)}` }
}

/**
 * The schema's rules, checked by hand for the common well-formed request: this runs for every
 * call on the proxy's hot path, and the schema (with its exact messages) still decides the rest.
 */
function wellFormed(raw: unknown): JsonRpcRequest | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined
  const r = raw as Record<string, unknown>
  const { id, method, params } = r
  if (r.jsonrpc !== '2.0') return undefined
  if (!((typeof id === 'string' && id.length <= 256) || (typeof id === 'number' && Number.isFinite(id))))
    return undefined
  if (typeof method !== 'string' || method.length === 0 || method.length > 128) return undefined
  if (params !== undefined && !Array.isArray(params)) return undefined
  return { jsonrpc: '2.0', id, method, params: (params as unknown[] | undefined) ?? [] }
}

export const DEFAULT_MAX_BATCH = 100

/** A reply as JSON text (a WebSocket frame, a batch item). */
export function replyFrame(id: JsonRpcId, result: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result })
}

/** A cached result's reply: the result spliced in as the JSON it is stored as. */
export function hitFrame(id: JsonRpcId, json: string): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${json}}`
}

export function errorFrame(id: JsonRpcId, error: JsonRpcErrorObject): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error })
}
