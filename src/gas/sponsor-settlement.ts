import { decodeEventLog, encodeEventTopics, pad } from 'viem'
import { entryPoint07Abi } from 'viem/account-abstraction'
import type { RawLog, RpcCaller } from '../bundler/chain.ts'
import { opFromHandleOps } from '../bundler/receipts.ts'
import type { EntryPointVersion } from '../bundler/types.ts'
import { type BackgroundLoop, LoopSet } from '../common/background-loop.ts'
import type { Logger } from '../logger.ts'
import type { Storage } from '../storage/database.ts'
import { type LeaderTurn, leaderLoop } from '../storage/session-lock.ts'
import { type Address, type Hash, type Hex, toLowerAddress, toLowerHash } from '../types.ts'
import type { SettleResult, SponsoredOpEvent, SponsorStore } from './sponsor-store.ts'

/**
 * Settles reservations from the EntryPoint's `UserOperationEvent`s whose paymaster is ours, and
 * releases those whose signature expired unused. `settleLogs` takes logs from anywhere (bundler
 * receipts, the indexer); the poller reads them itself with eth_getLogs, one network at a time
 * under a PostgreSQL advisory lock (like the bundler's builder), so one instance does it.
 */

export const [USER_OPERATION_EVENT] = encodeEventTopics({
  abi: entryPoint07Abi,
  eventName: 'UserOperationEvent',
})

export interface SettlementNetwork {
  slug: string
  chainId: number
  rpc: RpcCaller
  /** Each EntryPoint (and its version) with our paymaster there. */
  paymasters: readonly { entryPoint: Address; version: EntryPointVersion; paymaster: Address }[]
  /** Blocks behind the head the poller stays (reorg safety); 0 on a devnet. */
  confirmations?: number
  /** Where a poller without a cursor starts: this many blocks behind the head. */
  startLookback?: number
  /** Largest eth_getLogs range. */
  maxRange?: number
}

export interface SettlementOptions {
  storage: Storage
  store: SponsorStore
  networks: readonly SettlementNetwork[]
  logger: Logger
  pollMs?: number
}

/**
 * The sponsored-op events among `logs` (other events, and other paymasters', are skipped), with
 * validAfter still unknown (settleLogs reads it from the bundle transaction).
 */
export function sponsoredEvents(network: SettlementNetwork, logs: readonly RawLog[]): SponsoredOpEvent[] {
  const ours = new Map(network.paymasters.map((p) => [p.entryPoint, p.paymaster]))
  const out: SponsoredOpEvent[] = []
  for (const log of logs) {
    if (log.removed || log.topics[0]?.toLowerCase() !== USER_OPERATION_EVENT) continue
    const ep = toLowerAddress(log.address)
    const paymaster = ours.get(ep)
    if (!paymaster) continue
    const e = decodeEventLog({
      abi: entryPoint07Abi,
      eventName: 'UserOperationEvent',
      topics: log.topics as [Hex, ...Hex[]],
      data: log.data,
    })
    if (e.args.paymaster.toLowerCase() !== paymaster) continue
    out.push({
      network: network.slug,
      entryPoint: ep,
      paymaster,
      sender: toLowerAddress(e.args.sender),
      nonce: e.args.nonce,
      userOpHash: toLowerHash(e.args.userOpHash),
      success: e.args.success,
      actualGasCost: e.args.actualGasCost,
      transactionHash: toLowerHash(log.transactionHash),
      blockNumber: BigInt(log.blockNumber),
      validAfter: null,
    })
  }
  return out
}

export class SponsorSettlement {
  private readonly nets = new Map<string, SettlementNetwork>()
  private readonly loops = new LoopSet(() => [...this.nets.values()].map((n) => this.leader(n)))

  constructor(private readonly opts: SettlementOptions) {
    for (const n of opts.networks) this.nets.set(n.slug, n)
  }

  /** Settles what `logs` pay for; returns one result per sponsored event. */
  async settleLogs(network: string, logs: readonly RawLog[]): Promise<SettleResult[]> {
    const net = this.net(network)
    const inputs = new Map<Hash, Promise<Hex | null>>()
    const out: SettleResult[] = []
    for (const e of sponsoredEvents(net, logs)) {
      let input = inputs.get(e.transactionHash)
      if (!input) {
        input = this.txInput(net, e.transactionHash)
        inputs.set(e.transactionHash, input)
      }
      out.push(await this.opts.store.settle({ ...e, validAfter: validAfterOf(net, e, await input) }))
    }
    return out
  }

  private async txInput(net: SettlementNetwork, hash: Hash): Promise<Hex | null> {
    const tx = await this.request<{ input: Hex } | null>(net, 'eth_getTransactionByHash', [hash])
    return tx?.input ?? null
  }

  /**
   * One poll: reads the next range of EntryPoint logs, settles, then releases reservations whose
   * validUntil is before the last read block's timestamp (no later block can include them) and
   * moves the cursor. Safe to repeat: settlement is idempotent.
   */
  async pollOnce(
    network: string,
  ): Promise<{ from: bigint; to: bigint; settled: number; released: number } | null> {
    const net = this.net(network)
    const head = BigInt(await this.request<Hex>(net, 'eth_blockNumber', []))
    const safe = head - BigInt(net.confirmations ?? 0)
    const cursor = await this.opts.store.cursor(net.slug)
    const from = cursor ? cursor.block + 1n : maxBig(0n, safe - BigInt(net.startLookback ?? 1000))
    if (from > safe) return null
    const to = minBig(safe, from + BigInt(net.maxRange ?? 2000) - 1n)
    const logs = await this.request<RawLog[]>(net, 'eth_getLogs', [
      {
        fromBlock: `0x${from.toString(16)}`,
        toBlock: `0x${to.toString(16)}`,
        address: net.paymasters.map((p) => p.entryPoint),
        topics: [USER_OPERATION_EVENT, null, null, net.paymasters.map((p) => pad(p.paymaster, { size: 32 }))],
      },
    ])
    const results = await this.settleLogs(net.slug, logs)
    const block = await this.request<{ timestamp: Hex } | null>(net, 'eth_getBlockByNumber', [
      `0x${to.toString(16)}`,
      false,
    ])
    if (!block) throw new Error(`block ${to} of ${net.slug} is not available`)
    const timestamp = Number(BigInt(block.timestamp))
    const released = await this.opts.store.releaseExpired(net.slug, timestamp)
    await this.opts.store.setCursor(net.slug, to, timestamp)
    return { from, to, settled: results.filter((r) => r === 'settled').length, released }
  }

  start(): void {
    this.loops.start()
  }

  stop(): Promise<void> {
    return this.loops.stop()
  }

  /**
   * The network's settlement, run by whichever instance holds its lock. The lock's session only
   * holds the lock (rounds use the pool); when it goes, the lock went with it, and the rounds
   * stop before another instance's begin.
   */
  private leader(net: SettlementNetwork): BackgroundLoop {
    const pollMs = this.opts.pollMs ?? 2_000
    return leaderLoop({
      storage: this.opts.storage,
      key: lockKey(net.slug),
      name: 'sponsorship settlement',
      failure: 'sponsorship settlement failed; retrying',
      logger: this.opts.logger.child({ component: 'sponsor-settlement', network: net.slug }),
      retryMs: pollMs,
      lead: (turn) => this.rounds(net, turn),
    })
  }

  /** Polls while this instance holds the lock; a full range means more is waiting. */
  private async rounds(net: SettlementNetwork, turn: LeaderTurn): Promise<void> {
    while (!turn.ended.aborted) {
      const r = await this.pollOnce(net.slug)
      const caughtUp = !r || r.to - r.from + 1n < BigInt(net.maxRange ?? 2000)
      if (caughtUp) await turn.sleep(this.opts.pollMs ?? 2_000)
    }
  }

  private net(network: string): SettlementNetwork {
    const n = this.nets.get(network)
    if (!n) throw new Error(`sponsorship settlement does not watch ${network}`)
    return n
  }

  private async request<T>(net: SettlementNetwork, method: string, params: unknown[]): Promise<T> {
    const out = await net.rpc.call(method, params)
    if (out.error) throw new Error(`${method} on ${net.slug} failed: ${out.error.message}`)
    return out.result as T
  }
}

/** The validAfter the mined op signed, read from its handleOps calldata; null when unreadable. */
function validAfterOf(net: SettlementNetwork, e: SponsoredOpEvent, input: Hex | null): number | null {
  const pm = net.paymasters.find((p) => p.entryPoint === e.entryPoint)
  if (!input || !pm) return null
  const op = opFromHandleOps(
    input,
    { address: pm.entryPoint, version: pm.version },
    net.chainId,
    e.userOpHash,
  )
  if (!op) return null
  // Both versions: abi.encode(uint48 validUntil, uint48 validAfter) right after the paymaster fields.
  const data: Hex = op.version === 'v07' ? op.paymasterData : `0x${op.paymasterAndData.slice(42)}`
  if (data.length < 2 + 128) return null
  return Number(BigInt(`0x${data.slice(66, 130)}`))
}

const lockKey = (network: string) => `halyard-sponsor-settlement:${network}`

const maxBig = (a: bigint, b: bigint) => (a > b ? a : b)
const minBig = (a: bigint, b: bigint) => (a < b ? a : b)
