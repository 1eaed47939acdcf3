import type { GatewaySettings } from '../chains/gateway.ts'
import { getBlockNumber, malformedAnswer, nodeError } from '../chains/reads.ts'
import type { Network } from '../chains/registry.ts'
import {
  RPC_INTERNAL_ERROR,
  RPC_INVALID_PARAMS,
  RPC_LIMIT_EXCEEDED,
  RpcError,
  type RpcOutcome,
} from '../jsonrpc.ts'

/**
 * Messages nodes and providers use when an eth_getLogs range or result is too large
 * (geth, Erigon, Infura, Alchemy, QuickNode, Ankr, Besu wording).
 */
const RANGE_REJECTION =
  /block range|range (is )?too (large|wide|big)|range limit|more than [\d,]+ (results|logs)|query returned more than|response size (exceeded|is larger|should not)|limited to (a )?[\d,]+|too many (blocks|results|logs)|exceed(s|ed)? (the )?max(imum)? (block )?range|query timeout exceeded/i

export function isRangeRejection(out: RpcOutcome): boolean {
  return out.error !== undefined && RANGE_REJECTION.test(out.error.message)
}

/** Halving stops here: this many sub-requests for one call is already a lot of upstream work. */
const MAX_SUBREQUESTS = 256

type Filter = Record<string, unknown>

const hex = (n: number) => `0x${n.toString(16)}`

/**
 * The client's eth_getLogs goes to the pool as it came and its answer back unchanged (the
 * gateway forwarding a request, not a chain read: no reshaping by chains/reads.ts); only the
 * head it needs for a tag is a typed read.
 *
 * eth_getLogs with guards: the block range is checked against the network's limit before any
 * upstream sees it; an upstream that rejects a range as too large gets it in halves (recursively),
 * and the halves are merged in block order; a merged result over the result limit is refused.
 */
export class GetLogsGuard {
  constructor(
    private readonly network: Network,
    private readonly settings: GatewaySettings,
  ) {}

  async run(params: readonly unknown[]): Promise<RpcOutcome> {
    const filter = params[0]
    if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) {
      throw new RpcError(RPC_INVALID_PARAMS, 'eth_getLogs: params[0] must be a filter object')
    }
    const f = filter as Filter
    if (f.blockHash !== undefined) return this.checkSize(await this.network.pool.call('eth_getLogs', params))
    // Range check before sending; the head is only needed when a bound is a tag.
    const range = await this.resolveRange(f)
    const span = range.to - range.from + 1
    if (span > this.settings.getLogsMaxRange) {
      throw new RpcError(
        RPC_LIMIT_EXCEEDED,
        `eth_getLogs block range is ${span} blocks; the limit (getLogsMaxRange) is ${this.settings.getLogsMaxRange} blocks: narrow fromBlock/toBlock`,
      )
    }
    // The request as sent first: tags stay tags, so `latest` means the node's latest.
    const first = await this.network.pool.call('eth_getLogs', params)
    if (!isRangeRejection(first) || range.from >= range.to) return this.checkSize(first)
    return this.checkSize(await this.split(f, range.from, range.to, { count: 1 }, params.slice(1)))
  }

  private async fetch(
    f: Filter,
    from: number,
    to: number,
    budget: { count: number },
    rest: readonly unknown[],
  ): Promise<RpcOutcome> {
    budget.count++
    const out = await this.network.pool.call('eth_getLogs', [
      { ...f, fromBlock: hex(from), toBlock: hex(to) },
      ...rest,
    ])
    if (!isRangeRejection(out) || from >= to || budget.count >= MAX_SUBREQUESTS) return out
    return this.split(f, from, to, budget, rest)
  }

  private async split(
    f: Filter,
    from: number,
    to: number,
    budget: { count: number },
    rest: readonly unknown[],
  ): Promise<RpcOutcome> {
    const mid = Math.floor((from + to) / 2)
    const [a, b] = await Promise.all([
      this.fetch(f, from, mid, budget, rest),
      this.fetch(f, mid + 1, to, budget, rest),
    ])
    if (a.error !== undefined) return a
    if (b.error !== undefined) return b
    if (!Array.isArray(a.result) || !Array.isArray(b.result)) {
      return {
        error: { code: RPC_INTERNAL_ERROR, message: 'eth_getLogs: upstream answered with a non-array' },
      }
    }
    const merged = a.result.concat(b.result)
    if (merged.length > this.settings.getLogsMaxResults) throw this.tooMany(merged.length)
    return { result: merged }
  }

  private checkSize(out: RpcOutcome): RpcOutcome {
    if (Array.isArray(out.result) && out.result.length > this.settings.getLogsMaxResults) {
      throw this.tooMany(out.result.length)
    }
    return out
  }

  private tooMany(n: number): RpcError {
    return new RpcError(
      RPC_LIMIT_EXCEEDED,
      `eth_getLogs matched ${n > this.settings.getLogsMaxResults ? `more than ${this.settings.getLogsMaxResults}` : n} logs; the limit (getLogsMaxResults) is ${this.settings.getLogsMaxResults}: narrow the block range or the filter`,
    )
  }

  private async resolveRange(f: Filter): Promise<{ from: number; to: number }> {
    const from = await this.height(f.fromBlock, 'fromBlock')
    const to = await this.height(f.toBlock, 'toBlock')
    if (from > to) {
      throw new RpcError(RPC_INVALID_PARAMS, `eth_getLogs: fromBlock (${from}) is after toBlock (${to})`)
    }
    return { from, to }
  }

  private async height(tag: unknown, name: string): Promise<number> {
    if (tag === undefined || tag === 'latest' || tag === 'pending' || tag === 'safe') return this.head()
    if (tag === 'earliest') return 0
    if (tag === 'finalized') return Math.max(0, this.network.pool.finalizedHead?.() ?? (await this.head()))
    if (typeof tag === 'string' && /^0x[0-9a-fA-F]{1,13}$/.test(tag)) return Number.parseInt(tag.slice(2), 16)
    throw new RpcError(
      RPC_INVALID_PARAMS,
      `eth_getLogs: ${name} must be a block number (0x hex) or a block tag`,
    )
  }

  private async head(): Promise<number> {
    const known = this.network.pool.bestHead?.()
    if (known !== undefined) return known
    let head: bigint
    try {
      head = await getBlockNumber(this.network)
    } catch (err) {
      // The upstream's failure, not the caller's: its own error, never "invalid params".
      const refused = nodeError(err)
      if (refused) throw new RpcError(refused.code, refused.message, refused.data)
      if (malformedAnswer(err)) throw noUsableHead()
      throw err
    }
    if (head > BigInt(Number.MAX_SAFE_INTEGER)) throw noUsableHead()
    return Number(head)
  }
}

const noUsableHead = () =>
  new RpcError(RPC_INTERNAL_ERROR, 'eth_getLogs: the upstream reported no usable head')
