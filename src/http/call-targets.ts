import { parseTransaction } from 'viem'

/**
 * The contract addresses a JSON-RPC call touches, for a key's allowed-contracts list
 * (docs/browser.md). Pure. `undefined`: the method is not one the list governs (reads of
 * blocks, balances, receipts…). Otherwise the lowercased addresses; an empty array means the
 * call names no contract the list could allow — a `eth_getLogs` without an address filter, a
 * contract creation, a raw transaction that does not decode — and is refused under a list.
 */
export function callTargets(method: string, params: readonly unknown[]): readonly string[] | undefined {
  switch (method) {
    case 'eth_call':
    case 'eth_estimateGas':
    case 'eth_createAccessList':
    case 'eth_sendTransaction':
      return toOf(params[0])
    case 'eth_getLogs':
    case 'eth_newFilter':
      return addressFilter(params[0])
    case 'eth_subscribe':
      // Only log subscriptions name contracts; heads and pending hashes touch none.
      return params[0] === 'logs' ? addressFilter(params[1]) : undefined
    case 'eth_sendRawTransaction':
    case 'eth_sendRawTransactionSync':
    case 'eth_sendRawTransactionConditional':
      return rawTo(params[0])
    case 'eth_simulateV1':
      return simulated(params[0])
    default:
      return undefined
  }
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/

function address(v: unknown): string | undefined {
  return typeof v === 'string' && ADDRESS.test(v) ? v.toLowerCase() : undefined
}

function toOf(tx: unknown): readonly string[] {
  const to = address((tx as { to?: unknown } | null)?.to)
  return to === undefined ? [] : [to]
}

/** A filter's `address`: one address or an array of them; absent or malformed names none. */
function addressFilter(filter: unknown): readonly string[] {
  const given = (filter as { address?: unknown } | null)?.address
  const list = Array.isArray(given) ? given : [given]
  const out: string[] = []
  for (const a of list) {
    const v = address(a)
    if (v === undefined) return []
    out.push(v)
  }
  return out
}

function rawTo(raw: unknown): readonly string[] {
  if (typeof raw !== 'string' || !raw.startsWith('0x')) return []
  try {
    const to = address(parseTransaction(raw as `0x${string}`).to)
    return to === undefined ? [] : [to]
  } catch {
    return []
  }
}

/** eth_simulateV1: every call of every simulated block. */
function simulated(payload: unknown): readonly string[] {
  const blocks = (payload as { blockStateCalls?: unknown } | null)?.blockStateCalls
  if (!Array.isArray(blocks)) return []
  const out: string[] = []
  for (const b of blocks) {
    const calls = (b as { calls?: unknown } | null)?.calls
    if (!Array.isArray(calls)) return []
    for (const c of calls) {
      const [to] = toOf(c)
      if (to === undefined) return []
      out.push(to)
    }
  }
  return out
}
