import type { Registry } from 'prom-client'
import { toHex } from 'viem'
import type { Network } from '../chains/registry.ts'
import { type BackgroundLoop, LoopSet } from '../common/background-loop.ts'
import type { Logger } from '../logger.ts'
import type { Storage } from '../storage/database.ts'
import { type LeaderTurn, leaderLoop } from '../storage/session-lock.ts'
import type { Address, Hash, Hex } from '../types.ts'
import type { TickResult } from './builder.ts'
import { mergeOverrides, type StateOverride } from './chain.ts'
import { BundlerDebug } from './debug.ts'
import { estimateUserOperationGas } from './estimate.ts'
import { liveCounts } from './mempool-store.ts'
import { BundlerMetrics } from './metrics.ts'
import { type BundlerNetworkSpec, builderLockKey, NetworkBundler } from './network.ts'
import { byHashResult, findUserOpLog, opFromHandleOps, receiptFromTx } from './receipts.ts'
import {
  BundlerError,
  type EntryPointRef,
  invalidFields,
  type RpcGasEstimate,
  type RpcUserOperationByHash,
  type RpcUserOperationReceipt,
  type UserOperation,
} from './types.ts'

export type { BundlerNetworkSpec, BundlingMode } from './network.ts'

/** The first look for a bundle just sent (ms). */
const FIRST_LOOK_MS = 50

/**
 * The bundler behind `POST /v1/bundler/{chain}/{network}`: one method per ERC-7769 JSON-RPC
 * method, taking parsed params (schema.ts) and returning the JSON-RPC `result` as is, or
 * throwing a BundlerError whose code and message the route passes on; the `debug_bundler_*`
 * operator methods on `debug`; metrics on `metrics`. `start()` runs one builder per network,
 * under a PostgreSQL advisory lock so that any number of instances share a database safely
 * (PGlite is one process: no lock needed).
 */

export interface BundlerServiceOptions {
  storage: Storage
  networks: readonly BundlerNetworkSpec[]
  logger: Logger
  /** Wait before retrying a builder lock another instance holds. */
  lockRetryMs?: number
  /** The app's Prometheus registry (the bundler's series join it). */
  registry?: Registry
}

export interface ExecutorBalance {
  network: string
  executor: Address
  wei: bigint
  /** At least the network's minExecutorBalance (default 0). */
  ok: boolean
}

/** The network config's EntryPoints (v0.7 preferred) as the bundler serves them. */
export function configuredEntryPoints(net: Network): EntryPointRef[] {
  const eps = net.config.accountAbstraction?.entryPoints ?? {}
  const out: EntryPointRef[] = []
  if (eps.v07) out.push({ address: eps.v07, version: 'v07' })
  if (eps.v06) out.push({ address: eps.v06, version: 'v06' })
  return out
}

export class BundlerService {
  private readonly nets = new Map<string, NetworkBundler>()
  private readonly loops = new LoopSet(() => [...this.nets.values()].map((n) => this.leader(n)))
  readonly metrics: BundlerMetrics
  readonly debug: BundlerDebug

  constructor(private readonly opts: BundlerServiceOptions) {
    const log = opts.logger
    this.metrics = new BundlerMetrics(opts.registry, {
      mempoolSizes: () =>
        liveCounts(opts.storage.db)
          .then((live) => new Map([...this.nets.keys()].map((k) => [k, live.get(k) ?? 0])))
          .catch(() => new Map()),
      executorBalances: () => this.executorBalances().catch(() => []),
    })
    for (const spec of opts.networks) {
      this.nets.set(spec.slug, new NetworkBundler(spec, opts.storage, log, this.metrics))
      const mode = spec.validation?.mode ?? 'unsafe'
      log.info(
        { network: spec.slug, validation: mode, bundling: spec.bundlingMode ?? 'auto' },
        mode === 'safe'
          ? 'bundler: ERC-7562 rules on (debug_traceCall)'
          : 'bundler: unsafe mode, ERC-7562 rules off (EntryPoint simulation only)',
      )
    }
    this.debug = new BundlerDebug((network) => this.net(network), opts.storage.db)
  }

  private net(network: string): NetworkBundler {
    const n = this.nets.get(network)
    if (!n) throw invalidFields(`the bundler does not serve network ${network}`)
    return n
  }

  supportedEntryPoints(network: string): Address[] {
    return this.net(network).spec.entryPoints.map((e) => e.address)
  }

  /** The EntryPoint version a client's op must be parsed as. */
  entryPointVersion(network: string, entryPoint: Address): EntryPointRef['version'] {
    return this.net(network).entryPoint(entryPoint).version
  }

  chainId(network: string): Hex {
    return toHex(this.net(network).spec.chainId)
  }

  /** Validates, then stores the op durably; resolves with its hash once committed. */
  async sendUserOperation(network: string, op: UserOperation, entryPoint: Address): Promise<Hash> {
    const n = this.net(network)
    this.metrics.opsReceived.inc({ network })
    try {
      const ep = n.entryPoint(entryPoint)
      const validated = await n.validator.validate(op, ep, {
        liveNonces: (key) => n.mempool.liveNonces(ep.address, op.sender, key),
      })
      const hash = await n.mempool.add(op, ep, validated)
      this.metrics.opsAccepted.inc({ network })
      n.nudge()
      return hash
    } catch (err) {
      this.metrics.opsRejected.inc({
        network,
        code: err instanceof BundlerError ? String(err.code) : 'internal',
      })
      throw err
    }
  }

  async estimateUserOperationGas(
    network: string,
    op: UserOperation,
    entryPoint: Address,
    stateOverride?: StateOverride,
  ): Promise<RpcGasEstimate> {
    const n = this.net(network)
    const ep = n.entryPoint(entryPoint)
    if (op.version !== ep.version)
      throw invalidFields(`entryPoint ${ep.address} takes ${ep.version} UserOperations, not ${op.version}`)
    const queued = await n.validator.queuedNonceOverride(op, ep, {
      liveNonces: (key) => n.mempool.liveNonces(ep.address, op.sender, key),
    })
    return estimateUserOperationGas(n.chain, ep, op, mergeOverrides(stateOverride ?? {}, queued))
  }

  async getUserOperationByHash(network: string, hash: Hash): Promise<RpcUserOperationByHash | null> {
    const n = this.net(network)
    const stored = await n.mempool.get(hash)
    // A dropped op may still have been mined: by another bundler, or by a bundle of ours whose
    // receipt came late. The chain's word wins.
    const onChain = stored?.state === 'dropped' ? await this.byHashFromChain(n, hash) : null
    if (onChain) return onChain
    if (stored) {
      const mined =
        stored.bundleTx && stored.blockNumber !== null && stored.blockHash
          ? {
              blockNumber: toHex(stored.blockNumber),
              blockHash: stored.blockHash,
              transactionHash: stored.bundleTx,
            }
          : null
      return {
        ...byHashResult(stored.op, stored.entryPoint, mined),
        status: stored.state,
        ...(stored.reason && (stored.state === 'dropped' || stored.state === 'failed')
          ? { reason: stored.reason }
          : {}),
      }
    }
    return this.byHashFromChain(n, hash)
  }

  /** An op found by its UserOperationEvent and rebuilt from its bundle's calldata. */
  private async byHashFromChain(n: NetworkBundler, hash: Hash): Promise<RpcUserOperationByHash | null> {
    const found = await findUserOpLog(n.chain, n.spec.entryPoints, hash, this.lookback(n))
    if (!found) return null
    const tx = await n.chain.transaction(found.log.transactionHash)
    if (!tx) return null
    const op = opFromHandleOps(tx.input, found.entryPoint, n.spec.chainId, hash)
    if (!op) return null
    return byHashResult(op, found.entryPoint.address, {
      blockNumber: found.log.blockNumber,
      blockHash: found.log.blockHash,
      transactionHash: found.log.transactionHash,
    })
  }

  async getUserOperationReceipt(network: string, hash: Hash): Promise<RpcUserOperationReceipt | null> {
    const n = this.net(network)
    const stored = await n.mempool.status(hash)
    // A dropped op is looked for on chain (below): it may have been mined all the same.
    if (stored && (stored.state === 'pending' || stored.state === 'submitted')) return null
    if (stored?.bundleTx) {
      const r = await receiptFromTx(n.chain, stored.bundleTx, stored.entryPoint, hash)
      if (r) return r
    }
    const found = await findUserOpLog(n.chain, n.spec.entryPoints, hash, this.lookback(n))
    if (!found) return null
    return receiptFromTx(n.chain, found.log.transactionHash, found.entryPoint.address, hash)
  }

  private lookback(n: NetworkBundler): bigint {
    return n.spec.receiptLookbackBlocks ?? 100_000n
  }

  /** One builder round now (tests); 'locked' when another instance holds the network's builder lock. */
  bundleNow(network: string): Promise<TickResult | 'locked'> {
    return this.net(network).round()
  }

  /**
   * Where the network's v0.7 simulations run from deployed code (simulations.ts), finding or
   * deploying it first as the builder loop does; null: they carry the full code override. Tests.
   */
  async prepareSimulations(network: string): Promise<Address | null> {
    const n = this.net(network)
    await n.exclusive(() => n.prepareSimulations(this.opts.storage.db))
    return n.chain.simulations
  }

  /** Each network's executor and its balance (metrics). */
  async executorBalances(): Promise<ExecutorBalance[]> {
    return Promise.all([...this.nets.keys()].map((network) => this.executorBalance(network)))
  }

  /** One network's executor and its balance (its /ready check). */
  async executorBalance(network: string): Promise<ExecutorBalance> {
    const n = this.net(network)
    const wei = await n.chain.balance(n.executor.address)
    return { network, executor: n.executor.address, wei, ok: wei >= (n.spec.minExecutorBalance ?? 0n) }
  }

  /** Starts one builder loop per network. */
  start(): void {
    this.loops.start()
  }

  async stop(): Promise<void> {
    await this.loops.stop()
    for (const n of this.nets.values()) n.wake = null
  }

  /** The network's builder, run by whichever instance holds its builder lock. */
  private leader(n: NetworkBundler): BackgroundLoop {
    const postgres = this.opts.storage.kind === 'postgres'
    const loop = leaderLoop({
      storage: this.opts.storage,
      key: builderLockKey(n.spec.slug),
      name: 'bundler builder',
      failure: 'bundler builder failed; retrying',
      logger: this.opts.logger.child({ component: 'bundler', network: n.spec.slug }),
      retryMs: this.opts.lockRetryMs ?? 2000,
      beforeAttempt: () => n.locateSimulations().catch(() => {}),
      // The session went and the lock with it: what this round did is in the database
      // (accepted ops, sent bundles), so whoever takes the lock next carries on from there.
      lead: async (turn) => {
        if (postgres) n.lockConn = turn.conn
        try {
          await this.rounds(n, turn)
        } finally {
          n.lockConn = null
        }
      },
    })
    n.wake = () => loop.wake()
    return loop
  }

  /** Builder rounds while this instance holds the lock; manual mode follows bundles but builds none. */
  private async rounds(n: NetworkBundler, turn: LeaderTurn): Promise<void> {
    const db = turn.conn
    let failures = 0
    while (!turn.ended.aborted) {
      try {
        n.nudged = false
        // A node refusing the lookup or deployment leaves simulations on the full override.
        if (!n.chain.simulations) await n.exclusive(() => n.prepareSimulations(db)).catch(() => {})
        const r = await n.exclusive(() => n.builder.tick(db, { build: n.mode === 'auto' }))
        await n.maybeDecay()
        failures = 0
        // A bundle just sent is looked for again soon (anvil and fast chains mine it at once),
        // then at the poll interval while it waits.
        if (r === 'sent') await turn.sleep(Math.min(n.spec.pollMs ?? 250, FIRST_LOOK_MS))
        else if (r !== 'idle') await turn.sleep(n.spec.pollMs ?? 250)
        else if (!n.nudged) await this.idle(n, turn, n.spec.idleMs ?? 1000)
      } catch (err) {
        if (turn.lost.aborted) return
        if (++failures >= 5) throw err
        this.opts.logger.debug({ network: n.spec.slug, err: (err as Error).message }, 'bundler round failed')
        await turn.sleep(Math.min(10_000, (n.spec.pollMs ?? 250) * 2 ** failures))
      }
    }
  }

  /** Sleeps with nothing to do: a new op (nudge) ends it early, as do stop and a mode change. */
  private async idle(n: NetworkBundler, turn: LeaderTurn, ms: number): Promise<void> {
    n.idling = true
    try {
      await turn.sleep(ms)
    } finally {
      n.idling = false
    }
  }
}
