import type { NetworkConfig } from '../config/file.ts'
import type { HttpUpstream } from './http-upstream.ts'

/** What one health probe learned about an upstream. */
export interface ProbeResult {
  /** false = the node serves another chain (or genesis); it must never be used. */
  chainOk: boolean
  /** The node's reported chain id or genesis hash, for the log line when it is wrong. */
  identity: string
  head: number
  /** Solana: the finalized slot the node reports; EVM: null (finality is a depth below head). */
  finalized: number | null
}

function hexNumber(v: unknown, what: string): number {
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{1,15}$/.test(v))
    throw new Error(`${what} is not a hex quantity`)
  return Number.parseInt(v.slice(2), 16)
}

function outcomeValue(out: { result?: unknown; error?: { message: string } }, method: string): unknown {
  if (out.error) throw new Error(`${method} failed: ${out.error.message}`)
  return out.result
}

/**
 * Asks an upstream who it is and where its head is. EVM: `eth_chainId` must equal the
 * configured chain id, `eth_blockNumber` gives the head. Solana: the finalized `getSlot`
 * is both head and finality; `getGenesisHash` identifies the cluster when configured.
 * Rejects when the node does not answer usefully within `timeoutMs`.
 */
export async function probeUpstream(
  upstream: HttpUpstream,
  cfg: NetworkConfig,
  timeoutMs: number,
): Promise<ProbeResult> {
  if (cfg.kind === 'solana') {
    const expected = cfg.gateway?.genesisHash
    const [slot, genesis] = await Promise.all([
      upstream.call('getSlot', [{ commitment: 'finalized' }], timeoutMs),
      expected ? upstream.call('getGenesisHash', [], timeoutMs) : Promise.resolve({ result: undefined }),
    ])
    const s = outcomeValue(slot, 'getSlot')
    if (typeof s !== 'number' || !Number.isSafeInteger(s) || s < 0)
      throw new Error('getSlot is not a slot number')
    const g = expected ? outcomeValue(genesis, 'getGenesisHash') : undefined
    return {
      chainOk: expected === undefined || g === expected,
      identity: typeof g === 'string' ? `genesis ${g}` : 'unchecked genesis',
      head: s,
      finalized: s,
    }
  }
  const [chainId, blockNumber] = await Promise.all([
    upstream.call('eth_chainId', [], timeoutMs),
    upstream.call('eth_blockNumber', [], timeoutMs),
  ])
  const id = hexNumber(outcomeValue(chainId, 'eth_chainId'), 'eth_chainId')
  const head = hexNumber(outcomeValue(blockNumber, 'eth_blockNumber'), 'eth_blockNumber')
  return { chainOk: id === cfg.chainId, identity: `chain id ${id}`, head, finalized: null }
}
