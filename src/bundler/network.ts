import { decodeFunctionResult, encodeFunctionData } from 'viem'
import { entryPoint06Abi, entryPoint07Abi } from 'viem/account-abstraction'
import type { Logger } from '../logger.ts'
import type { DB, Storage } from '../storage/database.ts'
import { releaseAdvisoryLock, tryAdvisoryLock } from '../storage/session-lock.ts'
import type { Address, Hex } from '../types.ts'
import { type BuilderSettings, BundleBuilder, DEFAULT_BUILDER, type TickResult } from './builder.ts'
import { openBundles } from './bundle-store.ts'
import { BundlerChain, type RpcCaller } from './chain.ts'
import { erc7562Rules, type StakeRule } from './erc7562.ts'
import { Executor } from './executor.ts'
import { DEFAULT_MEMPOOL, Mempool, type MempoolSettings } from './mempool.ts'
import type { StoredOp } from './mempool-store.ts'
import type { BundlerMetrics } from './metrics.ts'
import { DEFAULT_REPUTATION, Reputation, type ReputationSettings } from './reputation.ts'
import { deploySimulations, findSimulations } from './simulations.ts'
import { BundlerError, BundlerErrorCode, type EntryPointRef, invalidFields, type StakeInfo } from './types.ts'
import { DEFAULT_VALIDATION, type ValidationSettings, Validator } from './validation.ts'

/**
 * One network's bundler: its node, validator, mempool, reputation and builder, wired together
 * (the builder reports mined ops to reputation and metrics), and the per-instance state of its
 * builder loop: the round queue, the connection holding the builder lock, the bundling mode.
 */

export interface BundlerNetworkSpec {
  /** The network's slug (`ethereum-devnet`): the mempool's key in the database. */
  slug: string
  chainId: number
  rpc: RpcCaller
  /** In order of preference (eth_supportedEntryPoints). */
  entryPoints: readonly EntryPointRef[]
  /** Keys bundles are sent from (the first is used today); never logged. */
  executorKeys: readonly Hex[]
  validation?: Partial<ValidationSettings>
  mempool?: Partial<MempoolSettings>
  builder?: Partial<BuilderSettings>
  reputation?: Partial<ReputationSettings>
  /** 'manual': bundles only on sendBundleNow (debug_bundler_setBundlingMode); default 'auto'. */
  bundlingMode?: BundlingMode
  /** An executor below this balance (wei) makes the network not ready. */
  minExecutorBalance?: bigint
  /** EVM-running node calls in flight at once (simulations, traces); anvil is fastest at 1. */
  maxConcurrentExecutions?: number
  /**
   * Deploy EntryPointSimulations v0.7 (simulations.ts) from the executor when it is not on the
   * network yet. Either way, a deployed copy found at its deterministic address is used.
   */
  deploySimulations?: boolean
  /** How long an idle builder waits before looking again (a new op wakes it at once). */
  idleMs?: number
  /** How often a bundle in flight is checked. */
  pollMs?: number
  /** How far back receipts of ops not in this mempool are searched. */
  receiptLookbackBlocks?: bigint
}

export type BundlingMode = 'auto' | 'manual'

export class NetworkBundler {
  readonly chain: BundlerChain
  readonly executor: Executor
  readonly validator: Validator
  readonly mempool: Mempool
  readonly reputation: Reputation
  readonly builder: BundleBuilder
  mode: BundlingMode
  /** Serialises this instance's builder rounds on the network. */
  private queue: Promise<unknown> = Promise.resolve()
  /** The connection holding the builder lock, while this instance's loop holds it (PostgreSQL). */
  lockConn: DB | null = null
  /** Ends the builder loop's current sleep (a bundling mode change); set while the loop runs. */
  wake: (() => void) | null = null
  /** Set while the builder sleeps with nothing to do: a new op ends that sleep at once. */
  idling = false
  /** An op arrived since the builder's round began: it looks again instead of idling. */
  nudged = false
  lastDecay = 0
  /** ERC-7562 MIN_STAKE_VALUE / MIN_UNSTAKE_DELAY for this network. */
  readonly stake: StakeRule
  private readonly log: Logger
  private simulationsLookedAt = Number.NEGATIVE_INFINITY
  private simulationsDeployTried = false

  constructor(
    readonly spec: BundlerNetworkSpec,
    private readonly storage: Storage,
    logger: Logger,
    metrics: BundlerMetrics,
  ) {
    if (spec.executorKeys.length === 0) throw new Error(`bundler on ${spec.slug} has no executor key`)
    const network = spec.slug
    this.log = logger.child({ component: 'bundler', network })
    this.mode = spec.bundlingMode ?? 'auto'
    this.chain = new BundlerChain(spec.rpc, spec.maxConcurrentExecutions)
    this.executor = new Executor(spec.executorKeys[0] as Hex, spec.chainId)
    const pool = { ...DEFAULT_MEMPOOL, ...spec.mempool }
    const stake = { minStake: pool.minStake, minUnstakeDelaySec: pool.minUnstakeDelaySec }
    this.stake = stake
    const validation = { ...DEFAULT_VALIDATION, ...spec.validation }
    if (validation.mode === 'safe' && !validation.rules) validation.rules = erc7562Rules(stake)
    this.validator = new Validator(this.chain, spec.chainId, validation)
    this.reputation = new Reputation(
      storage.db,
      network,
      { ...DEFAULT_REPUTATION, ...spec.reputation },
      stake,
    )
    const rep = (spec.reputation?.enabled ?? validation.mode === 'safe') ? this.reputation : null
    this.mempool = new Mempool({
      db: storage.db,
      network,
      settings: pool,
      reputation: rep ?? undefined,
      shared: storage.sharedAccess,
    })
    const outcome = (o: string) => metrics.bundles.inc({ network, outcome: o })
    this.builder = new BundleBuilder({
      network,
      chain: this.chain,
      entryPoints: spec.entryPoints,
      executor: this.executor,
      logger: logger.child({ component: 'bundler', network }),
      settings: { ...DEFAULT_BUILDER, ...spec.builder },
      storageAccess: this.validator.storageAccess,
      hooks: {
        ...(rep
          ? {
              admit: (ops: StoredOp[]) => rep.admit(ops),
              failedInBundle: (op: StoredOp, reason: string) =>
                rep.failedInBundle(op, reason, async (a) =>
                  this.isStaked(await this.stakeOf(op.entryPoint, a)),
                ),
            }
          : {}),
        sent: () => outcome('sent'),
        bumped: () => outcome('fee_bumped'),
        notLanded: (state) => outcome(state),
        reorged: () => metrics.reorged.inc({ network }),
        mined: async (ops) => {
          outcome('mined')
          const now = Date.now()
          for (const o of ops)
            metrics.inclusionSeconds.observe({ network }, (now - o.createdAt.getTime()) / 1000)
          await rep?.included(ops)
        },
      },
    })
  }

  /**
   * A new op is waiting. Only an idle builder is woken: one following a bundle in flight keeps
   * its poll interval, else every accept would cost a builder round (node and database reads).
   */
  nudge(): void {
    this.nudged = true
    if (this.idling) this.wake?.()
  }

  entryPoint(address: Address): EntryPointRef {
    const a = address.toLowerCase()
    const ep = this.spec.entryPoints.find((e) => e.address === a)
    if (!ep)
      throw invalidFields(
        `entryPoint ${a} is not supported here; supported: ${this.spec.entryPoints.map((e) => e.address).join(', ')}`,
      )
    return ep
  }

  /** The EntryPoint's stake record of `address`. */
  async stakeOf(entryPoint: Address, address: Address): Promise<StakeInfo> {
    const ep = this.entryPoint(entryPoint)
    const abi = ep.version === 'v06' ? entryPoint06Abi : entryPoint07Abi
    const data = encodeFunctionData({ abi, functionName: 'getDepositInfo', args: [address] })
    const out = await this.chain.call({ to: ep.address, data })
    if (!out.ok)
      throw new BundlerError(BundlerErrorCode.internal, `EntryPoint.getDepositInfo reverted: ${out.message}`)
    const info = decodeFunctionResult({ abi, functionName: 'getDepositInfo', data: out.data })
    return { stake: BigInt(info.stake), unstakeDelaySec: BigInt(info.unstakeDelaySec) }
  }

  isStaked(info: StakeInfo): boolean {
    return info.stake >= this.stake.minStake && info.unstakeDelaySec >= this.stake.minUnstakeDelaySec
  }

  /** Runs `fn` after this instance's previous builder round on the network. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn)
    this.queue = run.catch(() => {})
    return run
  }

  /**
   * One builder round now. On PostgreSQL, unless this instance's loop holds the network's builder
   * lock, the lock is taken for the round: 'locked' when another instance holds it.
   */
  round(opts: { build?: boolean } = {}): Promise<TickResult | 'locked'> {
    const db = this.storage.db
    if (this.storage.kind !== 'postgres' || this.lockConn) {
      const conn = this.lockConn ?? db
      return this.exclusive(() => this.builder.tick(conn, opts))
    }
    return this.exclusive(() =>
      db.connection().execute(async (conn) => {
        if (!(await tryAdvisoryLock(conn, builderLockKey(this.spec.slug))).ok) return 'locked' as const
        try {
          return await this.builder.tick(conn, opts)
        } finally {
          await releaseAdvisoryLock(conn, builderLockKey(this.spec.slug))
        }
      }),
    )
  }

  /**
   * Looks for deployed EntryPointSimulations (v0.7 EntryPoints only), again at most once a minute
   * while it is absent (another instance or operator may deploy it).
   */
  async locateSimulations(now = Date.now()): Promise<void> {
    if (this.chain.simulations || now - this.simulationsLookedAt < 60_000) return
    if (!this.spec.entryPoints.some((e) => e.version === 'v07')) return
    this.simulationsLookedAt = now
    this.chain.simulations = await findSimulations(this.chain)
  }

  /**
   * Builder side, between rounds (the network's builder lock held): finds the simulation code or,
   * where configured, deploys it once, while no bundle is in flight (the deployment takes the
   * executor's next nonce).
   */
  async prepareSimulations(db: DB): Promise<void> {
    await this.locateSimulations()
    if (this.chain.simulations || !this.spec.deploySimulations || this.simulationsDeployTried) return
    if (!this.spec.entryPoints.some((e) => e.version === 'v07')) return
    if ((await openBundles(db, this.spec.slug)).length > 0) return
    this.simulationsDeployTried = true
    this.chain.simulations = await deploySimulations(this.chain, this.executor, this.log)
  }

  /** The hourly reputation decay, looked at no more than once a minute. */
  async maybeDecay(now = Date.now()): Promise<void> {
    if (now - this.lastDecay < 60_000) return
    this.lastDecay = now
    await this.reputation.decay()
  }
}

export const builderLockKey = (network: string) => `halyard-bundler:${network}`
