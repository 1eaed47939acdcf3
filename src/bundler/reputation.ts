import type { DB } from '../storage/database.ts'
import type { Address } from '../types.ts'
import { setOpState } from './builder-store.ts'
import type { StakeRule } from './erc7562.ts'
import { countLiveOfEntity, type StoredOp } from './mempool-store.ts'
import {
  addReputation,
  clearReputation,
  decayReputation,
  type ReputationCounters,
  readReputation,
  setReputation,
} from './reputation-store.ts'
import { BundlerError, BundlerErrorCode, type StakeInfo, type UserOperation } from './types.ts'
import { factoryOf, paymasterOf } from './userop.ts'

/**
 * ERC-7562 reputation of the entities an op names (factory, paymaster; aggregators are not
 * supported), per network, persisted in `bundler_reputation` so every instance sharing the
 * database agrees and a restart forgets nothing:
 *
 * - opsSeen counts valid ops accepted that name the entity, opsIncluded those mined; both decay
 *   by 23/24 every hour.
 * - status: maxSeen = opsSeen / MIN_INCLUSION_RATE_DENOMINATOR (10 for a bundler); BANNED when
 *   maxSeen > opsIncluded + BAN_SLACK, THROTTLED when > opsIncluded + THROTTLING_SLACK.
 * - GREP-010: a banned entity's ops are refused (-32504) and its waiting ops dropped at bundling.
 *   GREP-020: a throttled one may have THROTTLED_ENTITY_MEMPOOL_COUNT ops waiting and
 *   THROTTLED_ENTITY_BUNDLE_COUNT per bundle. GREP-040: an entity whose op passed validation but
 *   fails in the bundle (AA1x factory, AA3x paymaster) gets opsSeen = BAN_OPS_SEEN_PENALTY.
 * - SREP-020: an OK staked entity is otherwise unlimited. UREP-020: an unstaked one may have
 *   SAME_UNSTAKED_ENTITY_MEMPOOL_COUNT + inclusionRate × INCLUSION_RATE_FACTOR + min(opsIncluded,
 *   MAX_OPS_ALLOWED_UNSTAKED_ENTITY) ops waiting.
 */

export interface ReputationSettings {
  /**
   * Whether reputation limits and counts apply; default: in safe mode only. Unsafe mode trusts
   * the EntryPoint simulation alone, as Alto's and Rundler's unsafe modes do (no reputation).
   */
  enabled?: boolean
  minInclusionDenominator: number
  throttlingSlack: number
  banSlack: number
  throttledEntityMempoolCount: number
  throttledEntityBundleCount: number
  sameUnstakedEntityMempoolCount: number
  inclusionRateFactor: number
  banOpsSeenPenalty: number
  maxOpsAllowedUnstakedEntity: number
}

/** ERC-7562's constants (bundler side). */
export const DEFAULT_REPUTATION: ReputationSettings = {
  minInclusionDenominator: 10,
  throttlingSlack: 10,
  banSlack: 50,
  throttledEntityMempoolCount: 4,
  throttledEntityBundleCount: 4,
  sameUnstakedEntityMempoolCount: 10,
  inclusionRateFactor: 10,
  banOpsSeenPenalty: 10_000,
  maxOpsAllowedUnstakedEntity: 10_000,
}

export type ReputationStatus = 'ok' | 'throttled' | 'banned'

export interface ReputationEntry extends ReputationCounters {
  status: ReputationStatus
}

type Role = 'factory' | 'paymaster'

const entitiesOf = (op: UserOperation): [Role, Address][] =>
  (
    [
      ['factory', factoryOf(op)],
      ['paymaster', paymasterOf(op)],
    ] as const
  ).filter((e): e is [Role, Address] => e[1] !== null)

export class Reputation {
  constructor(
    private readonly db: DB,
    readonly network: string,
    private readonly settings: ReputationSettings,
    private readonly stake: StakeRule,
  ) {}

  status(c: Pick<ReputationCounters, 'opsSeen' | 'opsIncluded'>): ReputationStatus {
    const s = this.settings
    const maxSeen = Math.floor(c.opsSeen / s.minInclusionDenominator)
    if (maxSeen > c.opsIncluded + s.banSlack) return 'banned'
    if (maxSeen > c.opsIncluded + s.throttlingSlack) return 'throttled'
    return 'ok'
  }

  private async counters(db: DB, addresses: readonly Address[]): Promise<Map<Address, ReputationCounters>> {
    const rows = await readReputation(db, this.network, addresses)
    return new Map(rows.map((r) => [r.address, r]))
  }

  /**
   * Refuses (-32504) an op whose factory or paymaster may not add one more op to the pool. Runs in
   * the accept transaction, after validation (which tells who is staked).
   */
  async checkAccept(
    trx: DB,
    op: UserOperation,
    stakes: { factoryInfo: StakeInfo; paymasterInfo: StakeInfo },
  ): Promise<void> {
    const entities = entitiesOf(op)
    if (entities.length === 0) return
    const s = this.settings
    const known = await this.counters(
      trx,
      entities.map(([, a]) => a),
    )
    for (const [role, address] of entities) {
      const c = known.get(address) ?? { address, opsSeen: 0, opsIncluded: 0 }
      const status = this.status(c)
      const counts = `opsSeen ${c.opsSeen}, opsIncluded ${c.opsIncluded}`
      if (status === 'banned')
        throw new BundlerError(
          BundlerErrorCode.entityThrottled,
          `${role} ${address} is banned by this bundler's ERC-7562 reputation rules (${counts}): too few of its ops were included; use another ${role}`,
          { [role]: address, status },
        )
      const info = role === 'factory' ? stakes.factoryInfo : stakes.paymasterInfo
      const staked =
        info.stake >= this.stake.minStake && info.unstakeDelaySec >= this.stake.minUnstakeDelaySec
      let limit = Number.POSITIVE_INFINITY
      let why = ''
      if (status === 'throttled') {
        limit = s.throttledEntityMempoolCount
        why = `is throttled by this bundler's ERC-7562 reputation rules (${counts})`
      }
      if (!staked) {
        const rate = c.opsSeen > 0 ? c.opsIncluded / c.opsSeen : 0
        const allowed =
          s.sameUnstakedEntityMempoolCount +
          Math.floor(rate * s.inclusionRateFactor) +
          Math.min(c.opsIncluded, s.maxOpsAllowedUnstakedEntity)
        if (allowed < limit) {
          limit = allowed
          why = `is not staked (ERC-7562 UREP-020, ${counts})`
        }
      }
      if (!Number.isFinite(limit)) continue
      const live = await countLiveOfEntity(trx, this.network, role, address)
      if (live >= limit)
        throw new BundlerError(
          BundlerErrorCode.entityThrottled,
          `${role} ${address} ${why}: it may have at most ${limit} UserOperations waiting and has ${live}; wait for them to be included${staked ? '' : `, or stake the ${role}`}`,
          { [role]: address, status },
        )
    }
  }

  /** The op was accepted: it counts as seen for each of its entities. */
  async seen(trx: DB, op: UserOperation): Promise<void> {
    for (const [, address] of entitiesOf(op)) await addReputation(trx, this.network, address, { seen: 1 })
  }

  /** Ops mined (their call succeeded or reverted): each counts as included for its entities. */
  async included(ops: readonly StoredOp[]): Promise<void> {
    const per = new Map<Address, number>()
    for (const o of ops) for (const [, a] of entitiesOf(o.op)) per.set(a, (per.get(a) ?? 0) + 1)
    for (const [address, n] of per) await addReputation(this.db, this.network, address, { included: n })
  }

  /** GREP-040: the entity the EntryPoint blamed for a validated op failing in a bundle is banned. */
  async failedInBundle(
    o: StoredOp,
    reason: string,
    isStaked?: (address: Address) => Promise<boolean>,
  ): Promise<void> {
    const code = /^AA(\d)/.exec(reason)?.[1]
    const factory = factoryOf(o.op)
    // [EREP-020]: a staked factory is accountable for the account it deploys failing (AA2x).
    const accountable =
      code === '2' && factory !== null && isStaked ? await isStaked(factory).catch(() => false) : false
    const blamed = code === '1' || accountable ? factory : code === '3' ? paymasterOf(o.op) : null
    const paymaster = paymasterOf(o.op)
    if ((code === '1' || code === '2') && paymaster) {
      // [EREP-015]: the op failed for its factory or account: its paymaster's opsSeen goes back.
      const c = (await this.counters(this.db, [paymaster])).get(paymaster)
      if (c && c.opsSeen > 0)
        await setReputation(this.db, this.network, [
          { address: paymaster, opsSeen: c.opsSeen - 1, opsIncluded: c.opsIncluded },
        ])
    }
    if (!blamed) return
    await setReputation(this.db, this.network, [
      { address: blamed, opsSeen: this.settings.banOpsSeenPenalty, opsIncluded: 0 },
    ])
  }

  /**
   * The ops a bundle may carry: a banned entity's are dropped (GREP-010), a throttled entity's
   * limited to THROTTLED_ENTITY_BUNDLE_COUNT (GREP-020); the rest wait for a later bundle.
   */
  async admit(ops: StoredOp[]): Promise<StoredOp[]> {
    const all = [...new Set(ops.flatMap((o) => entitiesOf(o.op).map(([, a]) => a)))]
    const known = await this.counters(this.db, all)
    const used = new Map<Address, number>()
    const out: StoredOp[] = []
    for (const o of ops) {
      const entities = entitiesOf(o.op).map(([role, a]) => {
        const c = known.get(a)
        return { role, address: a, status: c ? this.status(c) : ('ok' as const) }
      })
      const banned = entities.find((e) => e.status === 'banned')
      if (banned) {
        await setOpState(this.db, this.network, [o.hash], 'dropped', {
          reason: `${banned.role} ${banned.address} is banned (ERC-7562 reputation)`,
        })
        continue
      }
      const full = entities.some(
        (e) =>
          e.status === 'throttled' && (used.get(e.address) ?? 0) >= this.settings.throttledEntityBundleCount,
      )
      if (full) continue
      for (const e of entities) used.set(e.address, (used.get(e.address) ?? 0) + 1)
      out.push(o)
    }
    return out
  }

  async dump(): Promise<ReputationEntry[]> {
    return (await readReputation(this.db, this.network)).map((c) => ({ ...c, status: this.status(c) }))
  }

  set(rows: readonly ReputationCounters[]): Promise<void> {
    return setReputation(this.db, this.network, rows)
  }

  clear(): Promise<void> {
    return clearReputation(this.db, this.network)
  }

  decay(): Promise<number> {
    return decayReputation(this.db, this.network)
  }
}
