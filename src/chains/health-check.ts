import type { NetworkConfig } from '../config/file.ts'
import type { Logger } from '../logger.ts'
import { type HttpUpstream, UpstreamError } from './http-upstream.ts'
import type { UpstreamState } from './upstream-state.ts'
import { type LastProblem, lastProblem } from './upstream-unavailable.ts'

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

/**
 * One health round for one upstream (ManagedPool.checkAll): probes it and records on its state
 * what the probe learned — chain identity, head, finality, latency, breaker. Returns the problem
 * it showed, null when it answered (a wrong chain is logged, and recorded as its last error).
 */
export async function refreshUpstream(
  s: UpstreamState,
  cfg: NetworkConfig,
  timeoutMs: number,
  now: () => number,
  log: { logger: Logger | undefined; network: string },
): Promise<LastProblem | null> {
  const started = performance.now()
  try {
    const p = await probeUpstream(s.upstream, cfg, timeoutMs)
    s.recordLatency((performance.now() - started) / 2)
    if (!p.chainOk && s.chainOk !== false) {
      log.logger?.error(
        { network: log.network, upstream: s.id, reported: p.identity },
        `upstream serves the wrong chain (${p.identity}); it will not be used`,
      )
    }
    s.chainOk = p.chainOk
    s.head = p.head
    s.finalized = p.finalized
    s.lastError = p.chainOk ? null : `wrong chain (${p.identity})`
    if (s.probeSucceeded(now()))
      log.logger?.info({ network: log.network, upstream: s.id }, 'upstream back in service')
    return null
  } catch (err) {
    // Unreachable: whatever answers at that address next must prove its chain again (a
    // restarted URL may be another node). Merely slow or erroring: identity still holds.
    if (err instanceof UpstreamError && err.kind === 'connect' && s.chainOk === true) s.chainOk = null
    s.recordFailure(err instanceof Error ? err.message : String(err), now())
    return lastProblem(err)
  }
}
