import type { Caller } from '../auth/service.ts'
import type { Network } from '../chains/registry.ts'
import type { Slot } from '../rpc/admission.ts'
import { ANSWER_CAP, capText, keptAnswer, keptParams } from './redact.ts'
import type { RequestRow } from './store.ts'

/** One answered gateway request, as the HTTP endpoint and its fast lane report it. */
export interface GatewayExchange {
  /** When it arrived, ms since the epoch. */
  readonly at: number
  readonly caller: Caller
  /** The surface's name (the route's `what`: "JSON-RPC", the bundler's, the paymaster's). */
  readonly surface: string
  readonly network: Network
  readonly requestId: string
  readonly status: number
  readonly latencyMs: number
  readonly origin: string | undefined
  /** The parsed body (a request object or a batch array), undefined when it was no JSON. */
  readonly body: unknown
  readonly batch: boolean
  /** What admission made of each item, when the request got that far. */
  readonly slots: readonly Slot[] | undefined
  /** Per item, the JSON-RPC error code of its answer (absent: a result). */
  readonly codes: readonly (number | undefined)[] | undefined
  /** The answer's text (200), or the error body (an HTTP refusal). */
  readonly answer: string | undefined
  /** The HTTP error's message, for a refusal. */
  readonly error: string | undefined
}

/**
 * Items of one request counted and kept at most: a refused oversized batch (a body of a million
 * tiny calls fits the body limit) must not cost a row each.
 */
const MAX_ITEMS = 1000

/** The request's calls as the record sees them: a batch's items (at most MAX_ITEMS), or the one call. */
export function itemsOf(x: GatewayExchange): readonly unknown[] {
  if (!x.batch) return [x.body]
  const all = x.body as unknown[]
  return all.length > MAX_ITEMS ? all.slice(0, MAX_ITEMS) : all
}

/** Longest batch answer split into its items for the record; a larger one keeps none. */
const SPLIT_MAX = 1024 * 1024
const ERROR_CAP = 300
const ORIGIN_CAP = 200

/** The rows an exchange keeps: one per call (each item of a batch). */
export function buildRows(x: GatewayExchange): RequestRow[] {
  const items = itemsOf(x)
  const size = x.batch ? (x.body as unknown[]).length : 0
  const answers = answersOf(x, items.length)
  const at = new Date(x.at)
  const rows: RequestRow[] = []
  const errorText = x.error === undefined ? null : x.error.slice(0, ERROR_CAP)
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as { method?: unknown; params?: unknown } | null | undefined
    const method = typeof item?.method === 'string' ? item.method.slice(0, 128) : ''
    const slot = x.slots?.[i]
    const code = x.codes?.[i] ?? (slot && !slot.call ? slot.error.code : undefined)
    const charged = x.status < 400 && slot?.call !== undefined && !slot.intercepted
    rows.push({
      account_id: x.caller.accountId,
      at,
      key_id: x.caller.keyId,
      surface: x.surface,
      network: x.network.slug,
      request_id: x.requestId,
      item: i,
      batch_size: size,
      method,
      http_status: x.status,
      rpc_code: code ?? null,
      error: errorText ?? (code !== undefined ? rpcMessage(answers[i]) : null),
      latency_us: Math.max(0, Math.round(x.latencyMs * 1000)),
      compute_units: charged ? (slot?.call?.computeUnits ?? 0) : 0,
      origin: x.origin === undefined ? null : x.origin.slice(0, ORIGIN_CAP),
      params: item && typeof item === 'object' ? keptParams(method, item.params) : null,
      answer: keptAnswer(method, answers[i], code),
    })
  }
  return rows
}

/** Each item's answer text: the whole answer for a single call, the batch's items split. */
function answersOf(x: GatewayExchange, n: number): (string | undefined)[] {
  const text = x.answer
  if (text === undefined) return []
  if (!x.batch || x.status >= 400) return Array.from({ length: n }, () => text)
  if (text.length > SPLIT_MAX) return Array.from({ length: n }, () => capText(text, ANSWER_CAP))
  try {
    const parsed = JSON.parse(text) as unknown
    if (!Array.isArray(parsed)) return [text]
    return parsed.map((p) => JSON.stringify(p))
  } catch {
    return [text]
  }
}

/** The message of a JSON-RPC error answer, capped. */
function rpcMessage(answer: string | undefined): string | null {
  if (answer === undefined) return null
  try {
    const m = (JSON.parse(answer) as { error?: { message?: unknown } }).error?.message
    return typeof m === 'string' ? m.slice(0, ERROR_CAP) : null
  } catch {
    return null
  }
}
