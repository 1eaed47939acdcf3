import { decodeFunctionResult, encodeFunctionData, type LocalAccount, parseAbi, toHex } from 'viem'
import type { RpcCaller } from '../bundler/chain.ts'
import type { EntryPointVersion, UserOperation } from '../bundler/types.ts'
import { describeZodError } from '../common/validation.ts'
import { invalidRequest, notFound } from '../errors.ts'
import type { Viewer } from '../http/access.ts'
import type { PriceSource } from '../prices/sources.ts'
import type { Storage } from '../storage/database.ts'
import { type Address, type Hex, isAddress, toLowerAddress } from '../types.ts'
import { PaymasterDeposits, type PaymasterRef } from './paymaster-deposit.ts'
import {
  encodeValidity,
  STUB_SIGNATURE,
  signPaymasterHash,
  v06PaymasterAndData,
  v06PaymasterHash,
  v07PaymasterData,
  v07PaymasterHash,
} from './paymaster-signer.ts'
import { decodeAccountCalls } from './policy-calls.ts'
import { type OpFacts, SponsorshipRefused, utcDay } from './policy-checks.ts'
import { weiToUsd } from './policy-decimal.ts'
import { compileRules, type PolicyRules } from './policy-rules.ts'
import { POLICY_ID, POLICY_ID_RULE } from './policy-service.ts'
import { PolicyStore } from './policy-store.ts'
import { KeyedBatcher } from './sponsor-batcher.ts'
import { sponsorBodySchema } from './sponsor-body.ts'
import { DEFAULT_CEILINGS, effectiveCeilings, type PlanCeilings } from './sponsor-ceilings.ts'
import {
  maxCost,
  PAYMASTER_POST_OP_GAS,
  PAYMASTER_VERIFICATION_GAS,
  parseSponsoredOp,
  paymasterGas,
} from './sponsor-op.ts'
import {
  ceilingRefusal,
  decide,
  loadState,
  type NetworkCeilings,
  precondition,
  type ReserveOutcome,
  type ReserveRequest,
  reserveBatch,
  VALIDITY_TAG_MAX,
} from './sponsor-reserve.ts'
import { SponsorStore } from './sponsor-store.ts'

/**
 * Signs paymaster data for the configured VerifyingPaymasters (`POST /v1/gas/sponsor`
 * and ERC-7677 `pm_getPaymasterStubData` / `pm_getPaymasterData`). Each signature is
 * reserved against its policy in the transaction that decides it (sponsor-reserve.ts) before it
 * leaves; settlement and release are sponsor-settlement.ts.
 */

export interface SponsorPaymaster {
  version: EntryPointVersion
  entryPoint: Address
  paymaster: Address
}

export interface SponsorNetworkSpec {
  /** The REST slug (`ethereum-devnet`): policies name it as their `chain`. */
  slug: string
  chainId: number
  rpc: RpcCaller
  /** One VerifyingPaymaster per EntryPoint version it signs for; v0.7 is the default. */
  paymasters: readonly SponsorPaymaster[]
  /** USD price of the native currency (`native`). */
  prices: PriceSource
  /** The deposit below which /ready and metrics report the paymaster low (wei). */
  depositFloorWei?: bigint
  /** The operator's ceilings per plan (sponsor-ceilings.ts); DEFAULT_CEILINGS when unset. */
  ceilings?: PlanCeilings
  /** The native currency's symbol, for refusals (`ETH`). */
  nativeSymbol?: string
}

export interface SponsorServiceOptions {
  storage: Storage
  networks: readonly SponsorNetworkSpec[]
  /** The VerifyingPaymasters' signer; never logged, never returned. */
  signer: LocalAccount
  now?: () => number
  depositTtlMs?: number
  maxBatch?: number
}

export interface SponsorResult {
  paymaster: Address
  paymasterData: Hex
  paymasterVerificationGasLimit: Hex
  paymasterPostOpGasLimit: Hex
  /** The most this operation can cost, in USD at the current price; null when no price is known. */
  sponsored_gas_usd: string | null
  /** v0.6 only: the whole field to put in the op (paymaster ‖ paymasterData). */
  paymasterAndData?: Hex
  entryPoint: Address
  validUntil: number
  validAfter: number
  sponsorship_id: string
}

const senderNonceAbi = parseAbi(['function senderNonce(address) view returns (uint256)'])

interface Net {
  spec: SponsorNetworkSpec
  refs: Map<Address, PaymasterRef & SponsorPaymaster>
}

interface Prepared {
  net: Net
  ref: PaymasterRef & SponsorPaymaster
  op: UserOperation
  pmGas: { verification: bigint; postOp: bigint }
  facts: Omit<OpFacts, 'nowMs'>
  price: string | null
}

export class SponsorService {
  readonly policies: PolicyStore
  readonly store: SponsorStore
  readonly deposits: PaymasterDeposits
  private readonly nets = new Map<string, Net>()
  private readonly batcher: KeyedBatcher<ReserveRequest, ReserveOutcome>
  private readonly now: () => number

  constructor(private readonly opts: SponsorServiceOptions) {
    this.now = opts.now ?? Date.now
    this.policies = new PolicyStore(opts.storage.db)
    this.store = new SponsorStore(opts.storage.db)
    const allRefs: PaymasterRef[] = []
    for (const spec of opts.networks) {
      const refs = new Map<Address, PaymasterRef & SponsorPaymaster>()
      for (const p of spec.paymasters) {
        const ref = { ...p, network: spec.slug, rpc: spec.rpc, floorWei: spec.depositFloorWei ?? 0n }
        refs.set(p.entryPoint, ref)
        allRefs.push(ref)
      }
      this.nets.set(spec.slug, { spec, refs })
    }
    this.deposits = new PaymasterDeposits(allRefs, opts.depositTtlMs)
    this.batcher = new KeyedBatcher(
      (policyId, reqs) => reserveBatch(this.store, policyId, reqs, this.now(), (n) => this.ceilings(n)),
      opts.maxBatch,
    )
  }

  /** The operator's ceilings on `network`: a network not served gets the defaults. */
  private ceilings(network: string): NetworkCeilings {
    const spec = this.nets.get(network)?.spec
    return { plans: spec?.ceilings ?? DEFAULT_CEILINGS, symbol: spec?.nativeSymbol ?? 'native' }
  }

  /** Whether sponsorship is configured on `chain` (a REST slug). */
  serves(chain: string): boolean {
    return this.nets.has(chain)
  }

  /** The EntryPoints each network's paymasters sign for. */
  entryPoints(chain: string): Address[] {
    return [...(this.nets.get(chain)?.refs.keys() ?? [])]
  }

  /** `POST /v1/gas/sponsor`: the sponsorship answer, reserved against the policy. */
  async sponsor(viewer: Viewer, raw: unknown): Promise<SponsorResult> {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw invalidRequest('body must be a JSON object')
    const body = sponsorBodySchema.safeParse(raw)
    if (!body.success) throw invalidRequest(describeZodError(body.error))
    const { chain, policy_id, user_operation, entryPoint } = body.data
    const net = this.net(chain, 'chain')
    const ref = this.paymasterFor(net, entryPoint, 'entryPoint')
    const op = parseSponsoredOp(user_operation, ref.version, { field: 'user_operation' })
    return this.sign(viewer, policy_id, await this.prepare(net, ref, op))
  }

  /** ERC-7677 `pm_getPaymasterStubData`: data to estimate gas with; reserves nothing. */
  async getPaymasterStubData(viewer: Viewer, network: string, params: unknown) {
    const p = this.rpcParams(network, params)
    const op = parseSponsoredOp(p.op, p.ref.version, { field: 'userOperation', estimating: true })
    const prepared = await this.prepare(p.net, p.ref, op)
    const policy = await this.check(viewer, p.policyId, prepared)
    // As many non-zero bytes as the final data can have: gas estimated on the stub covers it.
    const validity = encodeValidity(0xffffffffffff, VALIDITY_TAG_MAX)
    if (p.ref.version === 'v06')
      return {
        paymasterAndData: v06PaymasterAndData(
          p.ref.paymaster,
          0xffffffffffff,
          VALIDITY_TAG_MAX,
          STUB_SIGNATURE,
        ),
        sponsor: { name: policy.name },
        isFinal: false,
      }
    return {
      paymaster: p.ref.paymaster,
      paymasterData: `${validity}${STUB_SIGNATURE.slice(2)}`,
      // Ours, not the op's: a client may send zeros before estimating.
      paymasterVerificationGasLimit: toHex(PAYMASTER_VERIFICATION_GAS),
      paymasterPostOpGasLimit: toHex(PAYMASTER_POST_OP_GAS),
      sponsor: { name: policy.name },
      isFinal: false,
    }
  }

  /** ERC-7677 `pm_getPaymasterData`: the signed data, reserved against the policy. */
  async getPaymasterData(viewer: Viewer, network: string, params: unknown) {
    const p = this.rpcParams(network, params)
    const op = parseSponsoredOp(p.op, p.ref.version, { field: 'userOperation' })
    const r = await this.sign(viewer, p.policyId, await this.prepare(p.net, p.ref, op))
    if (p.ref.version === 'v06') return { paymasterAndData: r.paymasterAndData as Hex }
    return { paymaster: r.paymaster, paymasterData: r.paymasterData }
  }

  private net(chain: string, field: string): Net {
    const net = this.nets.get(chain)
    if (!net) throw invalidRequest(`${field}: gas sponsorship is not configured for ${chain}`)
    return net
  }

  private paymasterFor(net: Net, entryPoint: string | undefined, field: string) {
    if (entryPoint === undefined) {
      const ref = [...net.refs.values()].find((r) => r.version === 'v07') ?? [...net.refs.values()][0]
      if (!ref) throw invalidRequest(`chain: no paymaster is configured for ${net.spec.slug}`)
      return ref
    }
    const ref = net.refs.get(toLowerAddress(entryPoint))
    if (!ref)
      throw invalidRequest(
        `${field}: ${entryPoint} is not an EntryPoint sponsored on ${net.spec.slug}; use one of ${[...net.refs.keys()].join(', ')}`,
      )
    return ref
  }

  /** ERC-7677 params: [userOp, entryPoint, chainId, context{policy_id}]. */
  private rpcParams(network: string, params: unknown) {
    if (!Array.isArray(params) || params.length < 3)
      throw invalidRequest('params must be [userOperation, entryPoint, chainId, context]')
    const [op, entryPoint, chainId, context] = params as unknown[]
    const net = this.net(network, 'network')
    if (typeof entryPoint !== 'string' || !isAddress(entryPoint))
      throw invalidRequest('entryPoint (params[1]) must be a 0x-prefixed 20-byte hex address')
    const ref = this.paymasterFor(net, entryPoint, 'entryPoint (params[1])')
    const id =
      typeof chainId === 'string' && /^0x[0-9a-fA-F]+$/.test(chainId) ? Number(BigInt(chainId)) : chainId
    if (id !== net.spec.chainId)
      throw invalidRequest(
        `chainId (params[2]) is ${String(chainId)}; this endpoint serves chain ${toHex(net.spec.chainId)}`,
      )
    const ctx = (context ?? {}) as Record<string, unknown>
    const policyId = typeof ctx === 'object' ? (ctx.policy_id ?? ctx.policyId) : undefined
    if (typeof policyId !== 'string' || !POLICY_ID.test(policyId))
      throw invalidRequest(
        `context (params[3]) must carry policy_id: { "policy_id": "gp_…" }; policy_id ${POLICY_ID_RULE}`,
      )
    return { net, ref, op, policyId }
  }

  /** Everything about the op the rules read, and the deposit check. */
  private async prepare(
    net: Net,
    ref: PaymasterRef & SponsorPaymaster,
    op: UserOperation,
  ): Promise<Prepared> {
    const pmGas = paymasterGas(op)
    const maxCostWei = maxCost(op, pmGas)
    const [prices, deposit] = await Promise.all([
      net.spec.prices.prices(['native']).catch(() => new Map<string, string>()),
      this.deposits.deposit(ref),
    ])
    if (deposit < maxCostWei)
      throw new SponsorshipRefused({
        rule: 'paymaster_deposit',
        message: `paymaster_deposit: paymaster ${ref.paymaster} has ${deposit} wei deposited at EntryPoint ${ref.entryPoint}, less than this operation's maximum cost of ${maxCostWei} wei; the operator must top up the deposit`,
      })
    const price = prices.get('native') ?? null
    return {
      net,
      ref,
      op,
      pmGas,
      price,
      facts: {
        network: net.spec.slug,
        sender: op.sender,
        calls: decodeAccountCalls(op.callData),
        maxCostWei,
        maxCostUsd: price === null ? null : weiToUsd(maxCostWei, price),
      },
    }
  }

  /** The stub's early answer: every rule, on counters read without a lock. */
  private async check(viewer: Viewer, policyId: string, p: Prepared) {
    const policy = await this.policies.get(viewer, policyId)
    if (!policy) throw notFound(`policy ${policyId} not found`)
    const pre = precondition(policy, { ...viewer, chain: p.net.spec.slug })
    if (pre) throw pre
    const rules = compileRules(policy.rules as PolicyRules)
    const nowMs = this.now()
    const state = await loadState(this.store, null, policy, rules, [{ facts: p.facts }], nowMs)
    const facts = { ...p.facts, nowMs }
    const refusal = decide(rules, facts, state.counters(p.op.sender))
    if (refusal) throw refusal
    const usage = await this.store.accountUsage(
      this.store.db,
      viewer.accountId,
      policy.chain,
      utcDay(nowMs),
      false,
    )
    const ceiling = this.ceilings(policy.chain)
    const over = await ceilingRefusal(
      this.store,
      null,
      effectiveCeilings(ceiling.plans, usage),
      usage,
      facts,
      ceiling.symbol,
    )
    if (over) throw over
    return policy
  }

  private async sign(viewer: Viewer, policyId: string, p: Prepared): Promise<SponsorResult> {
    const { op, ref, pmGas } = p
    const { chainId } = p.net.spec
    // Read before deciding: the v0.6 hash covers the paymaster's per-sender nonce.
    const senderNonce = op.version === 'v06' ? await this.senderNonce(p.net, ref.paymaster, op.sender) : 0n
    const outcome = await this.batcher.submit(policyId, {
      ...viewer,
      chain: p.net.spec.slug,
      facts: p.facts,
      entryPoint: ref.entryPoint,
      paymaster: ref.paymaster,
      nonce: op.nonce,
      nativePriceUsd: p.price,
    })
    if (!outcome.ok) throw outcome.error
    const { validUntil, validAfter } = outcome
    const base = {
      paymaster: ref.paymaster,
      paymasterVerificationGasLimit: toHex(pmGas.verification),
      paymasterPostOpGasLimit: toHex(pmGas.postOp),
      sponsored_gas_usd: p.facts.maxCostUsd,
      entryPoint: ref.entryPoint,
      validUntil,
      validAfter,
      sponsorship_id: outcome.id,
    }
    if (op.version === 'v06') {
      const hash = v06PaymasterHash(op, chainId, ref.paymaster, senderNonce, validUntil, validAfter)
      const signature = await signPaymasterHash(this.opts.signer, hash)
      const paymasterAndData = v06PaymasterAndData(ref.paymaster, validUntil, validAfter, signature)
      return { ...base, paymasterData: `0x${paymasterAndData.slice(42)}`, paymasterAndData }
    }
    const hash = v07PaymasterHash(
      {
        ...op,
        paymaster: ref.paymaster,
        paymasterVerificationGasLimit: pmGas.verification,
        paymasterPostOpGasLimit: pmGas.postOp,
      },
      chainId,
      ref.paymaster,
      validUntil,
      validAfter,
    )
    const signature = await signPaymasterHash(this.opts.signer, hash)
    return { ...base, paymasterData: v07PaymasterData(validUntil, validAfter, signature) }
  }

  private async senderNonce(net: Net, paymaster: Address, sender: Address): Promise<bigint> {
    const data = encodeFunctionData({ abi: senderNonceAbi, functionName: 'senderNonce', args: [sender] })
    const out = await net.spec.rpc.call('eth_call', [{ to: paymaster, data }, 'latest'])
    if (out.error) throw new Error(`reading the v0.6 paymaster's senderNonce failed: ${out.error.message}`)
    return decodeFunctionResult({ abi: senderNonceAbi, functionName: 'senderNonce', data: out.result as Hex })
  }
}
