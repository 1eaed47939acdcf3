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

/** Block parameter index of state reads pinned to a block. */
const STATE_READS: Readonly<Record<string, number>> = {
  eth_getBalance: 1,
  eth_getCode: 1,
  eth_getTransactionCount: 1,
  eth_call: 1,
  eth_getStorageAt: 2,
  eth_getProof: 2,
}

export function evmCachePlan(method: string, params: readonly unknown[]): CachePlan {
  switch (method) {
    case 'eth_chainId':
    case 'net_version':
      return IMMUTABLE
    case 'eth_getBlockByNumber':
    case 'eth_getTransactionByBlockNumberAndIndex':
    case 'eth_getBlockTransactionCountByNumber':
      return pinned(params[0])
    case 'eth_getBlockByHash':
      return locatedBy('number')
    case 'eth_getTransactionByHash':
    case 'eth_getTransactionReceipt':
    case 'eth_getTransactionByBlockHashAndIndex':
      return locatedBy('blockNumber')
    case 'eth_getBlockReceipts': {
      const p = pinned(params[0])
      if (p.kind !== 'none') return p
      return {
        kind: 'located',
        heightOf: (r) => (Array.isArray(r) ? blockHeight(field(r[0], 'blockNumber')) : undefined),
      }
    }
    case 'eth_getLogs': {
      const filter = params[0]
      if (typeof filter !== 'object' || filter === null || 'blockHash' in filter) return NONE
      const from = blockHeight((filter as { fromBlock?: unknown }).fromBlock)
      const to = blockHeight((filter as { toBlock?: unknown }).toBlock)
      return from === undefined || to === undefined ? NONE : { kind: 'pinned', height: Math.max(from, to) }
    }
    default: {
      const index = STATE_READS[method]
      return index === undefined ? NONE : pinned(params[index])
    }
  }
}

function commitmentOf(config: unknown): unknown {
  return field(config, 'commitment')
}

/** Solana: only finalized, slot-pinned reads; never balances, blockhashes or fees. */
export function solanaCachePlan(method: string, params: readonly unknown[]): CachePlan {
  const slot = (v: unknown) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined)
  switch (method) {
    case 'getGenesisHash':
      return IMMUTABLE
    case 'getBlock':
    case 'getBlockTime': {
      const s = slot(params[0])
      const c = commitmentOf(params[1])
      // The default commitment of these methods is finalized.
      return s === undefined || (c !== undefined && c !== 'finalized') ? NONE : { kind: 'pinned', height: s }
    }
    case 'getBlocks': {
      const end = slot(params[1])
      const c = commitmentOf(params[2])
      return end === undefined || (c !== undefined && c !== 'finalized')
        ? NONE
        : { kind: 'pinned', height: end }
    }
    case 'getTransaction': {
      const c = commitmentOf(params[1])
      if (c !== undefined && c !== 'finalized') return NONE
      return { kind: 'located', heightOf: (r) => slot(field(r, 'slot')) }
    }
    default:
      return NONE
  }
}
