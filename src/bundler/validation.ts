import { encodeFunctionData, size } from 'viem'
import { entryPointAbi } from '../aa/contracts.ts'
import type { Address, Hash } from '../types.ts'
import type { BlockInfo, BundlerChain, CallOutcome, StateOverride } from './chain.ts'
import {
  nonceOverride,
  runAloneInHandleOps,
  type SimulatedValidation,
  simulateValidation,
  type ValidationCall,
  validationCall,
  validationOutcome,
} from './entrypoint.ts'
import { type AccountQuery, type AccountState, readAccountState } from './state-reads.ts'
import { TRACE_DISAGREED } from './tracer.ts'
import {
  BundlerError,
  BundlerErrorCode,
  type EntryPointRef,
  invalidFields,
  type UserOperation,
  type ValidationOutcome,
} from './types.ts'
import {
  calcPreVerificationGas,
  factoryOf,
  initCodeOf,
  nonceKey,
  paymasterAndDataOf,
  paymasterOf,
  userOpHash,
} from './userop.ts'

/**
 * Everything checked before an op is accepted: fields and sizes first (no chain access), then
 * the chain reads (codes, nonce, deposit) with the EntryPoint's own validation simulation in
 * the same node call (state-reads.ts), and the head block (shared). The reads' verdicts come
 * before the simulation's, as if they had run first.
 *
 * `mode`: 'unsafe' trusts the simulation alone (for nodes without `debug_traceCall`). 'safe'
 * additionally runs the ERC-7562 rules (banned opcodes, storage access per entity, stake)
 * through `rules`, which traces the same simulation (erc7562.ts; the service supplies it).
 */

export type ValidationMode = 'safe' | 'unsafe'

/** ERC-7562 rule check over a traced validation; throws BundlerError -32502/-32504/-32505. */
export type ValidationRules = (ctx: {
  chain: BundlerChain
  entryPoint: EntryPointRef
  op: UserOperation
  simulation: SimulatedValidation
  /** The state override the simulation ran with (a queued nonce); the trace must use it too. */
  override: StateOverride
}) => Promise<readonly Address[] | undefined>

/** What validation needs from the mempool: the sender's live nonces under one key. */
export interface ValidationContext {
  liveNonces?(key: bigint): Promise<bigint[]>
}

export interface ValidationSettings {
  mode: ValidationMode
  rules?: ValidationRules
  /** Lowest maxPriorityFeePerGas accepted (wei); the base fee floor comes from the head block. */
  minPriorityFeePerGas: bigint
  /** Largest verificationGasLimit (+ paymasterVerificationGasLimit) accepted. */
  maxVerificationGas: bigint
  /** Largest encoded op (bytes): it must fit in a bundle transaction. */
  maxOpBytes: number
  /** An op must stay valid at least this long after acceptance (seconds). */
  validUntilMarginSec: number
}

export const DEFAULT_VALIDATION: ValidationSettings = {
  mode: 'unsafe',
  minPriorityFeePerGas: 0n,
  maxVerificationGas: 10_000_000n,
  maxOpBytes: 64 * 1024,
  validUntilMarginSec: 30,
}

export interface ValidatedOp {
  hash: Hash
  outcome: ValidationOutcome
  /** The paymaster's EntryPoint deposit at validation time (mempool checks it covers all its ops). */
  paymasterDeposit: bigint | null
}

/** How long accepts share one read of the head block. */
const HEAD_MAX_AGE_MS = 250

const fmt = (v: bigint) => `${v} (0x${v.toString(16)})`

/** Ops whose validation storage is remembered (ERC-7562 STO-041 in the builder), newest kept. */
const STORAGE_REMEMBERED = 10_000

export class Validator {
  /**
   * Per op hash, the contracts whose storage its safe-mode validation read or wrote (the builder
   * keeps an op out of a bundle while one of them is another pending op's sender [STO-041]).
   * This process's memory: an op validated by another instance is bundled without the check.
   */
  readonly storageAccess = new Map<Hash, readonly Address[]>()

  private rememberStorage(hash: Hash, storage: readonly Address[]): void {
    this.storageAccess.delete(hash)
    this.storageAccess.set(hash, storage)
    if (this.storageAccess.size > STORAGE_REMEMBERED)
      for (const oldest of this.storageAccess.keys()) {
        this.storageAccess.delete(oldest)
        break
      }
  }

  constructor(
    private readonly chain: BundlerChain,
    private readonly chainId: number,
    private readonly settings: ValidationSettings,
    private readonly now: () => number = () => Math.floor(Date.now() / 1000),
  ) {
    if (settings.mode === 'safe' && !settings.rules)
      throw new Error('bundler safe mode needs the ERC-7562 tracer (rules); run the network in unsafe mode')
  }

  /** Static checks: no chain access. */
  checkFields(op: UserOperation): void {
    const s = this.settings
    if (op.maxPriorityFeePerGas > op.maxFeePerGas)
      throw invalidFields(
        `maxPriorityFeePerGas ${fmt(op.maxPriorityFeePerGas)} is above maxFeePerGas ${fmt(op.maxFeePerGas)}: it must not exceed it`,
      )
    const bytes = size(initCodeOf(op)) + size(op.callData) + size(paymasterAndDataOf(op)) + size(op.signature)
    if (bytes > s.maxOpBytes)
      throw invalidFields(
        `userOperation carries ${bytes} bytes of initCode, callData, paymasterAndData and signature; at most ${s.maxOpBytes} are accepted`,
      )
    const verification =
      op.verificationGasLimit + (op.version === 'v07' ? op.paymasterVerificationGasLimit : 0n)
    if (verification > s.maxVerificationGas)
      throw invalidFields(
        `verificationGasLimit${op.version === 'v07' ? ' + paymasterVerificationGasLimit' : ''} is ${verification}; at most ${s.maxVerificationGas} is accepted`,
      )
    const pvg = calcPreVerificationGas(op)
    if (op.preVerificationGas < pvg)
      throw invalidFields(
        `preVerificationGas ${fmt(op.preVerificationGas)} is too low: this op needs at least ${fmt(pvg)} (calldata cost plus per-op overhead)`,
      )
  }

  /**
   * A trace that ends unlike its simulation means the state moved between the two calls (a block
   * mined between them: the bundle of the op a replacement replaces); the client got -32603 for
   * it. The op is validated once more, reads included, against the new head.
   */
  async validate(op: UserOperation, ep: EntryPointRef, ctx: ValidationContext = {}): Promise<ValidatedOp> {
    try {
      return await this.validateOnce(op, ep, ctx)
    } catch (err) {
      if (!(err instanceof BundlerError) || err.data !== TRACE_DISAGREED) throw err
      return this.validateOnce(op, ep, ctx)
    }
  }

  private async validateOnce(
    op: UserOperation,
    ep: EntryPointRef,
    ctx: ValidationContext,
  ): Promise<ValidatedOp> {
    if (op.version !== ep.version)
      throw invalidFields(`entryPoint ${ep.address} takes ${ep.version} UserOperations, not ${op.version}`)
    this.checkFields(op)
    const factory = factoryOf(op)
    const paymaster = paymasterOf(op)
    if (op.version === 'v06' && paymasterAndDataOf(op) !== '0x' && !paymaster)
      throw invalidFields('userOperation.paymasterAndData must start with the 20-byte paymaster address')
    const key = nonceKey(op.nonce)
    // At `latest`, not pinned to a block number read first: on anvil a number read before the
    // node shows the block it is mining (a funding transaction just sent) pinned the accept to
    // the state before it and refused the op (AA21); a trace that disagrees is retried instead
    // (validate).
    // The simulation rides along with the reads, as if the nonce were the sender's next: it is
    // used only when it is (an op queued behind the sender's waiting ops is simulated again).
    const [state, head] = await Promise.all([
      this.readState(
        { entryPoint: ep.address, sender: op.sender, key, factory, paymaster },
        validationCall(this.chain, ep, op),
      ),
      this.head(),
    ])
    const deployed = state.senderDeployed
    const deposit = paymaster ? state.deposit : null
    const override = await this.checkNonce(op, ep, state.nonce, ctx, deployed)
    if (deployed && factory)
      throw invalidFields(`sender ${op.sender} is already deployed: remove initCode (factory/factoryData)`)
    if (!deployed && !factory)
      throw invalidFields(`sender ${op.sender} has no code: add initCode (factory/factoryData) to deploy it`)
    if (factory && !state.factoryDeployed)
      throw invalidFields(`factory ${factory} has no code on this network`)
    if (paymaster && !state.paymasterDeployed)
      throw new BundlerError(
        BundlerErrorCode.simulatePaymasterValidation,
        `paymaster ${paymaster} has no code on this network (AA30)`,
      )
    this.checkFees(op, head.baseFeePerGas)

    const simulation =
      state.simulation && Object.keys(override).length === 0
        ? validationOutcome(op, state.simulation)
        : await simulateValidation(this.chain, ep, op, override)
    this.checkSimulation(simulation, Number(head.timestamp))
    const storage =
      this.settings.mode === 'safe'
        ? await this.settings.rules?.({ chain: this.chain, entryPoint: ep, op, simulation, override })
        : undefined
    if (op.version === 'v06') await runAloneInHandleOps(this.chain, ep, op, override)
    const hash = userOpHash(op, ep.address, this.chainId)
    if (storage && storage.length > 0) this.rememberStorage(hash, storage)

    return {
      hash,
      paymasterDeposit: deposit,
      outcome: {
        preOpGas: simulation.preOpGas,
        prefund: simulation.prefund,
        validAfter: simulation.validAfter,
        validUntil: simulation.validUntil >= 2 ** 48 - 1 ? null : simulation.validUntil,
        senderInfo: simulation.senderInfo,
        factoryInfo: simulation.factoryInfo,
        paymasterInfo: simulation.paymasterInfo,
        paymasterContext: simulation.paymasterContext,
      },
    }
  }

  /** Until when reads go one by one: the node refused the one-call reads (no state overrides?). */
  private separateUntil = 0

  /**
   * Codes, nonce and deposit, and `simulate`'s outcome: one call (state-reads.ts) where the node
   * takes it, else one per read and no simulation.
   */
  private async readState(
    q: AccountQuery,
    simulate: ValidationCall,
  ): Promise<AccountState & { simulation?: CallOutcome }> {
    if (Date.now() >= this.separateUntil) {
      const state = await readAccountState(this.chain, q, simulate)
      if (state) return state
      // The reads one by one say what went wrong; the one-call form is tried again in a minute.
      this.separateUntil = Date.now() + 60_000
    }
    const [sender, factory, paymaster, nonce, deposit] = await Promise.all([
      this.chain.code(q.sender),
      q.factory ? this.chain.code(q.factory) : Promise.resolve('0x'),
      q.paymaster ? this.chain.code(q.paymaster) : Promise.resolve('0x'),
      this.readNonce(q.entryPoint, q.sender, q.key),
      q.paymaster ? this.readDeposit(q.entryPoint, q.paymaster) : Promise.resolve(0n),
    ])
    return {
      senderDeployed: sender !== '0x',
      factoryDeployed: factory !== '0x',
      paymasterDeployed: paymaster !== '0x',
      nonce,
      deposit,
    }
  }

  private headCache: { at: number; block: Promise<BlockInfo> } | null = null

  /**
   * The head block, shared by the accepts of HEAD_MAX_AGE_MS: its base fee and time are floors
   * checked again when the builder bundles, so a block-old head costs nothing but a node read.
   */
  private head(): Promise<BlockInfo> {
    const now = Date.now()
    const cached = this.headCache
    if (cached && now - cached.at < HEAD_MAX_AGE_MS) return cached.block
    const block = this.chain.block('latest')
    this.headCache = { at: now, block }
    block.catch(() => {
      if (this.headCache?.block === block) this.headCache = null
    })
    return block
  }

  /**
   * The op's nonce must be the sender's next under its key, or follow the sender's ops waiting in
   * the mempool under that key without a gap: it is then validated as the chain will see it once
   * they are mined (the EntryPoint's nonce overridden). Such a queued op needs a deployed sender:
   * validation cannot run against the account a pending op is still to deploy.
   */
  private async checkNonce(
    op: UserOperation,
    ep: EntryPointRef,
    onChain: bigint,
    ctx: ValidationContext,
    deployed: boolean,
  ): Promise<StateOverride> {
    if (op.nonce === onChain) return {}
    const key = nonceKey(op.nonce)
    if (op.nonce < onChain)
      throw invalidFields(
        `nonce ${fmt(op.nonce)} is already used: the next nonce of sender ${op.sender} for key ${key} is ${fmt(onChain)}`,
      )
    const live = new Set(await (ctx.liveNonces?.(key) ?? Promise.resolve([])))
    let next = onChain
    while (live.has(next)) next++
    if (op.nonce > next)
      throw invalidFields(
        `nonce ${fmt(op.nonce)} is ahead: the next nonce of sender ${op.sender} for key ${key} is ${fmt(next)}${next === onChain ? '' : ` (after its ${next - onChain} waiting in the mempool)`}; send that one first`,
      )
    if (!deployed)
      throw invalidFields(
        `sender ${op.sender} is not deployed yet and its op with nonce ${fmt(onChain)} is still waiting: send nonce ${fmt(op.nonce)} once that op is mined`,
      )
    return nonceOverride(ep, op.sender, op.nonce)
  }

  /** For estimation: the nonce override an op queued behind the sender's waiting ops needs, else {}. */
  async queuedNonceOverride(
    op: UserOperation,
    ep: EntryPointRef,
    ctx: ValidationContext,
  ): Promise<StateOverride> {
    const key = nonceKey(op.nonce)
    const onChain = await this.readNonce(ep.address, op.sender, key)
    if (op.nonce <= onChain) return {}
    const live = new Set(await (ctx.liveNonces?.(key) ?? Promise.resolve([])))
    for (let n = onChain; n < op.nonce; n++) if (!live.has(n)) return {}
    return nonceOverride(ep, op.sender, op.nonce)
  }

  checkFees(op: UserOperation, baseFee: bigint): void {
    const minPriority = this.settings.minPriorityFeePerGas
    if (op.maxFeePerGas < baseFee)
      throw invalidFields(
        `maxFeePerGas ${fmt(op.maxFeePerGas)} is below the network's current base fee ${fmt(baseFee)}: raise it to at least that (plus the priority fee)`,
      )
    if (op.maxPriorityFeePerGas < minPriority)
      throw invalidFields(
        `maxPriorityFeePerGas ${fmt(op.maxPriorityFeePerGas)} is below this bundler's minimum ${fmt(minPriority)}: raise it`,
      )
  }

  checkSimulation(sim: SimulatedValidation, chainTime: number): void {
    if (sim.aggregator !== 0n)
      throw new BundlerError(
        BundlerErrorCode.unsupportedAggregator,
        `the account asks for signature aggregator 0x${sim.aggregator.toString(16).padStart(40, '0')}; this bundler supports no aggregators`,
      )
    if (sim.sigFailed)
      throw new BundlerError(
        BundlerErrorCode.invalidSignature,
        // The reference bundler's phrase first: clients and the ERC-4337 spec tests match on it.
        `Invalid UserOp signature or paymaster signature: ${sim.sigFailed} signature check failed: sign the userOpHash for this entryPoint and chain with the ${sim.sigFailed === 'paymaster' ? 'paymaster signer' : "account's owner key"}`,
      )
    const now = Math.max(this.now(), chainTime)
    if (sim.validAfter > now)
      throw new BundlerError(
        BundlerErrorCode.expiresShortly,
        `the op is not valid before ${sim.validAfter} (now ${now}): send it after validAfter`,
      )
    if (sim.validUntil < now + this.settings.validUntilMarginSec)
      throw new BundlerError(
        BundlerErrorCode.expiresShortly,
        `the op expires at ${sim.validUntil} (now ${now}); it must stay valid at least ${this.settings.validUntilMarginSec} s: raise validUntil`,
      )
  }

  async readNonce(entryPoint: Address, sender: Address, key: bigint): Promise<bigint> {
    const data = encodeFunctionData({ abi: entryPointAbi, functionName: 'getNonce', args: [sender, key] })
    const out = await this.chain.call({ to: entryPoint, data }, undefined, 'latest', { light: true })
    if (!out.ok)
      throw new BundlerError(BundlerErrorCode.internal, `EntryPoint.getNonce reverted: ${out.message}`)
    return BigInt(out.data)
  }

  async readDeposit(entryPoint: Address, account: Address): Promise<bigint> {
    const data = encodeFunctionData({ abi: entryPointAbi, functionName: 'balanceOf', args: [account] })
    const out = await this.chain.call({ to: entryPoint, data }, undefined, 'latest', { light: true })
    if (!out.ok)
      throw new BundlerError(BundlerErrorCode.internal, `EntryPoint.balanceOf reverted: ${out.message}`)
    return BigInt(out.data)
  }
}
