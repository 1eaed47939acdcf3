import type { Address, Hex } from '../types.ts'
import { type BundlerChain, type CallOutcome, mergeOverrides } from './chain.ts'
import type { ValidationCall } from './entrypoint.ts'

/**
 * The chain reads an accept needs before simulating — whether sender, factory and paymaster have
 * code, the sender's EntryPoint nonce under the op's key, the paymaster's deposit — and the
 * validation simulation itself, as one `eth_call` instead of up to six node round trips: a small
 * reader contract put at a scratch address by state override makes the EXTCODESIZE reads, calls
 * `getNonce` and `balanceOf` on the EntryPoint, then makes the simulation's call to the
 * EntryPoint (under the simulation's own override) and hands back its outcome. A node that
 * refuses the call (no state overrides) gets the reads one by one and the simulation on its own.
 *
 * The reads run in a call the reader makes to itself, which reverts with their results: a
 * reverted frame's warm accounts and slots (EIP-2929) are forgotten, so the simulation after it
 * pays for cold access as it would alone and as the bundle will (its preOpGas and its
 * verification gas match a simulation of its own).
 *
 * Calldata: entryPoint, sender, key, factory, paymaster (one word each; zero when absent), then
 * optionally the calldata of a call to make on the EntryPoint. Returns five words: the three
 * code sizes, the nonce, the deposit; with a call, then its success flag, its returndata size
 * and its returndata. Reverts when getNonce or balanceOf fails.
 */

/** 0x…48616c7944 ("HalyD"): no contract of ours lives there; the override is for this call only. */
export const READER_ADDRESS: Address = '0x00000000000000000000000000000048616c7944'

/** Hand-assembled; `{NAME}` is the 2-byte offset of the JUMPDEST marked `[NAME]`. */
const READER_ASM = [
  // Called by itself: the reads (below). Else it first calls itself for them.
  '333014',
  '61{READ}57',
  // calldatacopy(0x100, 0, 0xa0); call(gas, this, 0, 0x100, 0xa0, 0, 0)
  '60a0600061010037',
  '6000600060a06101006000305af1',
  // The reads revert with their five words (returndatasize 0xa0); anything else failed.
  '3d60a0141561{REVERT}5750',
  // returndatacopy(0, 0, 0xa0)
  '60a0600060003e',
  // len = calldatasize - 0xa0; no call asked: return(0, 0xa0)
  '3660a0900380',
  '1561{RETURN_READS}57',
  // calldatacopy(0x100, 0xa0, len); success = call(gas, ep, 0, 0x100, len, 0, 0)
  '8060a061010037',
  '600060008261010060006000355af1',
  // mstore(0xa0, success); mstore(0xc0, returndatasize); returndatacopy(0xe0, 0, returndatasize)
  '60a052',
  '3d60c052',
  '3d600060e03e',
  // return(0, 0xe0 + returndatasize)
  '3d60e0016000f3',
  '[RETURN_READS]60a06000f3',
  // The reads. mstore(0x00 / 0x20 / 0x40, extcodesize(sender / factory / paymaster))
  '[READ]6020353b600052',
  '6060353b602052',
  '6080353b604052',
  // getNonce(sender, key) calldata at 0x100; staticcall(gas, ep, 0x100, 0x44, 0x60, 0x20)
  '6335567e1a60e01b61010052',
  '60203561010452',
  '60403561012452',
  '6020606060446101006000355afa',
  '1561{REVERT}57',
  // balanceOf(paymaster) calldata at 0x100; staticcall(gas, ep, 0x100, 0x24, 0x80, 0x20)
  '6370a0823160e01b61010052',
  '60803561010452',
  '6020608060246101006000355afa',
  '1561{REVERT}57',
  // revert(0, 0xa0): the results go back, and so do the accounts and slots the reads warmed
  '60a06000fd',
  '[REVERT]600080fd',
]

function assemble(): Hex {
  const labels = new Map<string, number>()
  let bytes = 0
  for (const part of READER_ASM) {
    const label = /^\[(\w+)\]/.exec(part)
    if (label) labels.set(label[1] as string, bytes)
    // A label stands for its JUMPDEST (1 byte); a `{NAME}` placeholder for 2 bytes.
    bytes += part.replace(/^\[\w+\]/, '5b').replace(/\{\w+\}/g, '0000').length / 2
  }
  const code = READER_ASM.map((part) =>
    part.replace(/^\[\w+\]/, '5b').replace(/\{(\w+)\}/g, (_, name: string) => {
      const at = labels.get(name)
      if (at === undefined) throw new Error(`reader: no label ${name}`)
      return at.toString(16).padStart(4, '0')
    }),
  ).join('')
  return `0x${code}`
}

/** The reader's runtime code. */
export const READER_CODE: Hex = assemble()

export interface AccountState {
  senderDeployed: boolean
  factoryDeployed: boolean
  paymasterDeployed: boolean
  nonce: bigint
  deposit: bigint
}

const ZERO = '0'.repeat(64)
const word = (v: bigint) => v.toString(16).padStart(64, '0')
const addressWord = (a: Address | null) => (a ? a.slice(2).toLowerCase().padStart(64, '0') : ZERO)

/** What an accept reads: the sender's nonce under `key`, and the codes and deposit of its entities. */
export interface AccountQuery {
  entryPoint: Address
  sender: Address
  key: bigint
  factory: Address | null
  paymaster: Address | null
}

/** The reads in one call, with `simulate`'s outcome when asked; null: read one by one. */
export async function readAccountState(
  chain: BundlerChain,
  q: AccountQuery,
  /** A validation simulation to run in the same call (entrypoint.ts validationCall). */
  simulate?: ValidationCall,
): Promise<(AccountState & { simulation?: CallOutcome }) | null> {
  const reads = `${addressWord(q.entryPoint)}${addressWord(q.sender)}${word(q.key)}${addressWord(q.factory)}${addressWord(q.paymaster)}`
  const data: Hex = `0x${reads}${simulate ? simulate.data.slice(2) : ''}`
  const override = mergeOverrides(simulate?.override ?? {}, { [READER_ADDRESS]: { code: READER_CODE } })
  let out: CallOutcome
  try {
    // Alone, the reads are a light view call; with the simulation they run the EVM in earnest.
    out = await chain.call({ to: READER_ADDRESS, data }, override, 'latest', { light: !simulate })
  } catch {
    return null
  }
  if (!out.ok || out.data.length < 2 + 5 * 64) return null
  const hex = out.data
  const w = (i: number) => BigInt(`0x${hex.slice(2 + i * 64, 2 + (i + 1) * 64)}`)
  const state: AccountState = {
    senderDeployed: w(0) > 0n,
    factoryDeployed: w(1) > 0n,
    paymasterDeployed: w(2) > 0n,
    nonce: w(3),
    deposit: w(4),
  }
  if (!simulate) return hex.length === 2 + 5 * 64 ? state : null
  const size = w(6)
  if (hex.length !== 2 + 7 * 64 + Number(size) * 2) return null
  const returned: Hex = `0x${hex.slice(2 + 7 * 64)}`
  return {
    ...state,
    // The node's own message for a revert at the top level; here the EntryPoint's revert data speaks.
    simulation:
      w(5) === 1n
        ? { ok: true, data: returned }
        : { ok: false, revert: returned, message: 'execution reverted' },
  }
}
