import { keccak256, pad, toFunctionSelector } from 'viem'
import { type Address, toLowerAddress } from '../types.ts'
import type { SimulatedValidation } from './entrypoint.ts'
import { type TraceLevel, traceValidation, type ValidationTrace } from './tracer.ts'
import { BundlerError, BundlerErrorCode, type StakeInfo, type UserOperation } from './types.ts'
import { factoryOf, paymasterOf } from './userop.ts'
import type { ValidationRules } from './validation.ts'

/**
 * ERC-7562 validation rules over a traced validation (tracer.ts): banned opcodes [OP-011..080],
 * out-of-gas [OP-020], calls and code access [OP-041..061], storage per entity [STO-010..033] and
 * the stake they need. A broken rule is -32502 naming the rule, the entity and what it did, an
 * access allowed only to a staked entity included (as the reference bundler answers, with the stake
 * it needs in the message). Each message starts with the reference bundler's wording (clients and
 * the community's bundler-spec-tests match on it), then our rule id and what the entity did.
 */

export type EntityRole = 'factory' | 'account' | 'paymaster'

export interface StakeRule {
  minStake: bigint
  minUnstakeDelaySec: bigint
}

export interface Violation {
  code: typeof BundlerErrorCode.opcodeValidation
  rule: string
  message: string
}

const selector = (sig: string) => toFunctionSelector(sig).toLowerCase()
const ROLE_OF_SIG: Record<string, EntityRole> = {
  [selector('createSender(bytes)')]: 'factory',
  [selector(
    'validateUserOp((address,uint256,bytes,bytes,uint256,uint256,uint256,uint256,uint256,bytes,bytes),bytes32,uint256)',
  )]: 'account',
  [selector(
    'validateUserOp((address,uint256,bytes,bytes,bytes32,uint256,bytes32,bytes,bytes),bytes32,uint256)',
  )]: 'account',
  [selector(
    'validatePaymasterUserOp((address,uint256,bytes,bytes,uint256,uint256,uint256,uint256,uint256,bytes,bytes),bytes32,uint256)',
  )]: 'paymaster',
  [selector(
    'validatePaymasterUserOp((address,uint256,bytes,bytes,bytes32,uint256,bytes32,bytes,bytes),bytes32,uint256)',
  )]: 'paymaster',
}
const DEPOSIT_TO = selector('depositTo(address)')
const REF_NAME: Record<string, string> = { PREVRANDAO: 'DIFFICULTY' }

/** Slots "associated" with an address: keccak(address ‖ x) from the trace's KECCAK256 inputs. */
function associatedSlots(trace: ValidationTrace, addresses: readonly Address[]): Map<Address, bigint[]> {
  const out = new Map<Address, bigint[]>(addresses.map((a) => [a, []]))
  for (const input of trace.keccak) {
    const head = input.slice(2, 66)
    for (const a of addresses)
      if (head === pad(a, { size: 32 }).slice(2)) out.get(a)?.push(BigInt(keccak256(input)))
  }
  return out
}

/** ERC-7562: slot == address, or within 128 slots of keccak(address ‖ x) (a struct in a mapping). */
function isAssociated(slot: bigint, addr: Address, slots: Map<Address, bigint[]>): boolean {
  if (slot === BigInt(addr)) return true
  return (slots.get(addr) ?? []).some((k) => slot >= k && slot < k + 128n)
}

export interface RuleContext {
  op: UserOperation
  entryPoint: Address
  simulation: SimulatedValidation
  stake: StakeRule
}

/** Every rule the trace breaks, in trace order (the first is reported). */
export function checkTrace(trace: ValidationTrace, ctx: RuleContext): Violation[] {
  const { op, simulation } = ctx
  const sender = toLowerAddress(op.sender)
  const factory = factoryOf(op)
  const paymaster = paymasterOf(op)
  const entities: Record<EntityRole, { address: Address | null; info: StakeInfo }> = {
    factory: { address: factory, info: simulation.factoryInfo },
    account: { address: sender, info: simulation.senderInfo },
    paymaster: { address: paymaster, info: simulation.paymasterInfo },
  }
  const staked = (info: StakeInfo) =>
    info.stake >= ctx.stake.minStake && info.unstakeDelaySec >= ctx.stake.minUnstakeDelaySec
  const slots = associatedSlots(
    trace,
    [sender, factory, paymaster].filter((a): a is Address => a !== null),
  )
  const out: Violation[] = []
  const seen = new Set<EntityRole>()
  for (const level of trace.levels) {
    const role = ROLE_OF_SIG[level.sig.toLowerCase()]
    if (!role) continue
    seen.add(role)
    const entity = entities[role]
    if (!entity.address) continue
    out.push(
      ...checkLevel(level, role, entity.address, staked(entity.info), {
        ...ctx,
        sender,
        factory,
        paymaster,
        hasFactory: factory !== null,
        factoryStaked: staked(entities.factory.info),
        slots,
      }),
    )
  }
  for (const role of ['factory', 'account', 'paymaster'] as const)
    if (entities[role].address && !seen.has(role))
      throw new BundlerError(
        BundlerErrorCode.internal,
        `the ERC-7562 trace has no ${role} validation phase: the traced execution differs from the simulation`,
      )
  // [EREP-050] for EntryPoint v0.6 only: v0.7 charges the paymaster for its whole
  // paymasterPostOpGasLimit up front (and 10% of what goes unused), which prices the postOp grief
  // the rule guarded against; the reference bundler dropped it for v0.7 too (docs/bundler.md).
  if (
    op.version === 'v06' &&
    paymaster &&
    simulation.paymasterContext !== '0x' &&
    !staked(simulation.paymasterInfo)
  )
    out.push(
      stakeViolation(
        'EREP-050',
        'unstaked paymaster must not return context',
        `paymaster ${paymaster} returns a context for postOp`,
        ctx.stake,
      ),
    )
  return out
}

interface LevelContext extends RuleContext {
  sender: Address
  factory: Address | null
  paymaster: Address | null
  hasFactory: boolean
  factoryStaked: boolean
  slots: Map<Address, bigint[]>
}

const stakeViolation = (rule: string, ref: string, what: string, stake: StakeRule): Violation => ({
  code: BundlerErrorCode.opcodeValidation,
  rule,
  message: `${ref} [${rule}]: ${what}; ERC-7562 allows this only to a staked entity (stake at least ${stake.minStake} wei with an unstake delay of at least ${stake.minUnstakeDelaySec} s)`,
})

function checkLevel(
  level: TraceLevel,
  role: EntityRole,
  entity: Address,
  isStaked: boolean,
  ctx: LevelContext,
): Violation[] {
  const out: Violation[] = []
  const name = `${role} ${entity}`
  const opcode = (rule: string, ref: string, what: string) =>
    out.push({
      code: BundlerErrorCode.opcodeValidation,
      rule,
      message: `${ref} [${rule}]: ${name} ${what} during validation`,
    })
  const ep = ctx.entryPoint.toLowerCase()
  // The reference bundler names the op's other entities by role, any other contract by address.
  const nameAddr = (addr: string) =>
    addr === ctx.sender
      ? 'account'
      : addr === ctx.factory
        ? 'factory'
        : addr === ctx.paymaster
          ? 'paymaster'
          : addr

  for (const [op, count] of Object.entries(level.opcodes)) {
    if (op === 'CREATE2' && role === 'factory' && count === 1) continue // [OP-031]: the deployment
    if (op === 'CREATE' && role === 'account' && ctx.hasFactory) continue // [OP-032]
    if (op === 'BALANCE' || op === 'SELFBALANCE') {
      if (!isStaked)
        // [OP-080]
        opcode('OP-080', `unstaked ${role} uses banned opcode: ${op}`, 'is unstaked and uses ' + op)
    } else if (op === 'GAS')
      opcode('OP-012', `${role} uses banned opcode: GAS`, 'uses GAS other than right before a call')
    else if (op === 'CREATE2' && role === 'factory')
      opcode('OP-031', `${role} with too many CREATE2`, `uses CREATE2 ${count} times (once at most)`)
    else if (op === 'CREATE2')
      opcode('OP-031', `${role} uses banned opcode: CREATE2`, 'uses CREATE2 (only a factory may, once)')
    // The reference bundler's tracer names 0x44 by its pre-merge name.
    else opcode('OP-011', `${role} uses banned opcode: ${REF_NAME[op] ?? op}`, `uses the banned opcode ${op}`)
  }
  if (level.oog)
    opcode(
      'OP-020',
      `${role} internally reverts on oog`,
      'runs out of gas in a call; give it more gas or spend less',
    )

  for (const c of level.calls) {
    if (c.from === ep) continue
    if (c.to === ep) {
      if (c.sig !== DEPOSIT_TO && c.sig !== '0x')
        opcode(
          'OP-052',
          `illegal call into EntryPoint during validation ${c.sig}`,
          'calls the EntryPoint; only depositTo and plain transfers are allowed',
        )
    } else if (BigInt(c.value) > 0n)
      opcode(
        'OP-061',
        'May not may CALL with value',
        `sends value to ${c.to}; only the EntryPoint may receive value`,
      )
  }
  for (const [addr, { size, op }] of Object.entries(level.codeSize))
    if (size === 0 && addr !== ctx.sender)
      opcode(
        'OP-041',
        `${role} accesses un-deployed contract address ${addr} with opcode ${op}`,
        `accesses ${addr}, which has no code`,
      )
  for (const [addr, op] of Object.entries(level.extCode))
    if (addr === ep)
      opcode(
        'OP-054',
        `${role} accesses EntryPoint contract address ${ctx.entryPoint} with opcode ${op}`,
        "reads the EntryPoint's code (an EXTCODESIZE followed by ISZERO, as Solidity checks before a call, is allowed)",
      )

  for (const [addr, { reads, writes }] of Object.entries(level.access)) {
    if (addr === ctx.sender || addr === ep) continue // [STO-010]; EntryPoint deposits are checked by calls
    let needsStake: { slot: string; rule: string } | null = null
    for (const slotHex of new Set([...Object.keys(writes), ...Object.keys(reads)])) {
      const slot = BigInt(slotHex)
      if (isAssociated(slot, ctx.sender, ctx.slots)) {
        // [STO-021]/[STO-022]: the sender's associated storage, unless the op also deploys it.
        if (ctx.hasFactory && !(role === 'account' && ctx.factoryStaked))
          needsStake = { slot: slotHex, rule: 'STO-022' }
      } else if (isAssociated(slot, entity, ctx.slots)) needsStake = { slot: slotHex, rule: 'STO-032' }
      else if (addr === entity) needsStake = { slot: slotHex, rule: 'STO-031' }
      else if (!writes[slotHex]) needsStake = { slot: slotHex, rule: 'STO-033' }
      else
        opcode(
          'STO-031',
          `${role} has forbidden write to ${nameAddr(addr)} slot ${slotHex}`,
          `writes storage of ${addr} not associated with the sender or the ${role}`,
        )
    }
    if (needsStake && !isStaked) {
      const whose = addr === entity ? 'its own storage' : `storage of ${addr}`
      out.push(
        stakeViolation(
          needsStake.rule,
          `unstaked ${role} accessed ${nameAddr(addr)} slot ${needsStake.slot}`,
          `${name} accesses ${whose}`,
          ctx.stake,
        ),
      )
    }
  }
  return out
}

/** The Validator's `rules` for safe mode: trace, check, refuse with the first violation. */
export function erc7562Rules(stake: StakeRule): ValidationRules {
  return async ({ chain, entryPoint, op, simulation, override }) => {
    const trace = await traceValidation(chain, entryPoint, op, override)
    const [first, ...rest] = checkTrace(trace, { op, entryPoint: entryPoint.address, simulation, stake })
    if (first)
      throw new BundlerError(first.code, first.message, {
        rule: first.rule,
        ...(rest.length > 0 ? { more: rest.map((v) => v.rule) } : {}),
      })
    const ep = entryPoint.address.toLowerCase()
    const storage = new Set<Address>()
    for (const level of trace.levels)
      for (const addr of Object.keys(level.access)) if (addr !== ep) storage.add(addr as Address)
    return [...storage]
  }
}
