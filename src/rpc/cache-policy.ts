/**
 * Which JSON-RPC results can be cached: only those that cannot change any more. A plan is
 * decided from the request before the call (may a cached answer exist?) and checked against
 * the result after it (may this answer be stored?).
 *
 * - `immutable`: the same forever on this network (chain id, genesis hash).
 * - `pinned`: pinned to an explicit block (slot) number; cacheable once at or below finality.
 * - `located`: named by hash; cacheable once the result shows it sits in a finalized block.
 * `latest`, `pending`, `safe` and `finalized` tags are never cached: they move with the head.
 */
export type CachePlan =
  | { kind: 'none' }
  | { kind: 'immutable' }
  | { kind: 'pinned'; height: number }
  | { kind: 'located'; heightOf: (result: unknown) => number | undefined }

const NONE: CachePlan = { kind: 'none' }
const IMMUTABLE: CachePlan = { kind: 'immutable' }

/** An explicit block number: 0x-hex, or `earliest`. Tags that move return undefined. */
function blockHeight(tag: unknown): number | undefined {
  if (tag === 'earliest') return 0
  if (typeof tag === 'string' && /^0x[0-9a-fA-F]{1,13}$/.test(tag)) return Number.parseInt(tag.slice(2), 16)
  // EIP-1898 block parameter object: only the number form is pinned without a lookup.
  if (typeof tag === 'object' && tag !== null && 'blockNumber' in tag) {
    return blockHeight((tag as { blockNumber: unknown }).blockNumber)
  }
  return undefined
}

const pinned = (tag: unknown): CachePlan => {
  const h = blockHeight(tag)
  return h === undefined ? NONE : { kind: 'pinned', height: h }
}

function field(result: unknown, name: string): unknown {
  return typeof result === 'object' && result !== null ? (result as Record<string, unknown>)[name] : undefined
}

const locatedBy = (name: string): CachePlan => ({
  kind: 'located',
  heightOf: (r) => blockHeight(field(r, name)),
})

function commitmentOf(config: unknown): unknown {
  return field(config, 'commitment')
}

/* Plans as a method's registry row states them (src/rpc/methods/): a function of the params. */

export type PlanOf = (params: readonly unknown[]) => CachePlan

export const never: PlanOf = () => NONE
export const immutable: PlanOf = () => IMMUTABLE
/** Pinned by the block parameter at `index`. */
export const pinnedAt =
  (index: number): PlanOf =>
  (params) =>
    pinned(params[index])
/** Located by the result's `name` field (a block number), whatever the params. */
export const locatedAt = (name: string): PlanOf => {
  const plan = locatedBy(name)
  return () => plan
}

/** eth_getBlockReceipts: pinned by number, or located by the first receipt's block. */
export const blockReceiptsPlan: PlanOf = (params) => {
  const p = pinned(params[0])
  if (p.kind !== 'none') return p
  return {
    kind: 'located',
    heightOf: (r) => (Array.isArray(r) ? blockHeight(field(r[0], 'blockNumber')) : undefined),
  }
}

/** eth_getLogs: pinned when both ends are explicit numbers (a blockHash filter is never cached). */
export const logsPlan: PlanOf = (params) => {
  const filter = params[0]
  if (typeof filter !== 'object' || filter === null || 'blockHash' in filter) return NONE
  const from = blockHeight((filter as { fromBlock?: unknown }).fromBlock)
  const to = blockHeight((filter as { toBlock?: unknown }).toBlock)
  return from === undefined || to === undefined ? NONE : { kind: 'pinned', height: Math.max(from, to) }
}

const slot = (v: unknown) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined)
const finalizedOnly = (config: unknown) => {
  const c = commitmentOf(config)
  return c === undefined || c === 'finalized'
}

/** Solana: pinned by the slot at `slotIndex` when the config at `configIndex` is finalized (the default). */
export const slotPinnedAt =
  (slotIndex: number, configIndex: number): PlanOf =>
  (params) => {
    const s = slot(params[slotIndex])
    return s === undefined || !finalizedOnly(params[configIndex]) ? NONE : { kind: 'pinned', height: s }
  }

/** Solana getTransaction: located by the result's slot, finalized commitment only. */
export const solanaTransactionPlan: PlanOf = (params) =>
  finalizedOnly(params[1]) ? { kind: 'located', heightOf: (r) => slot(field(r, 'slot')) } : NONE
