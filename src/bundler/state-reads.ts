import type { Address, Hex } from '../types.ts'
import type { BundlerChain } from './chain.ts'

/**
 * The chain reads an accept needs before simulating — whether sender, factory and paymaster have
 * code, the sender's EntryPoint nonce under the op's key, the paymaster's deposit — as one
 * `eth_call` instead of two to five node round trips: a small reader contract put at a scratch
 * address by state override makes the EXTCODESIZE reads and calls `getNonce` and `balanceOf` on
 * the EntryPoint. A node that refuses the call (no state overrides) gets the reads one by one.
 *
 * Calldata: entryPoint, sender, key, factory, paymaster (one word each; zero when absent).
 * Returns five words: the three code sizes, the nonce, the deposit. Reverts when either
 * EntryPoint call fails.
 */

/** 0x…48616c7944 ("HalyD"): no contract of ours lives there; the override is for this call only. */
export const READER_ADDRESS = '0x00000000000000000000000000000048616c7944' as Address

function assemble(): Hex {
  const JUMP = 'JUMP'
  const parts: string[] = [
    // mstore(0x00 / 0x20 / 0x40, extcodesize(sender / factory / paymaster))
    '6020353b600052',
    '6060353b602052',
    '6080353b604052',
    // getNonce(sender, key) calldata at 0x100; staticcall(gas, ep, 0x100, 0x44, 0x60, 0x20)
    '6335567e1a60e01b61010052',
    '60203561010452',
    '60403561012452',
    '6020606060446101006000355afa',
    `1561${JUMP}57`,
    // balanceOf(paymaster) calldata at 0x100; staticcall(gas, ep, 0x100, 0x24, 0x80, 0x20)
    '6370a0823160e01b61010052',
    '60803561010452',
    '6020608060246101006000355afa',
    `1561${JUMP}57`,
    // return(0, 0xa0)
    '60a06000f3',
  ]
  const body = parts.join('')
  // The placeholder is as long as the 2-byte offset it stands for: the destination is the end.
  const code = body.replaceAll(JUMP, (body.length / 2).toString(16).padStart(4, '0'))
  // revert(0, 0) at the jump destination
  return `0x${code}5b600080fd` as Hex
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

/** The reads in one call; null when the node refused or the EntryPoint reverted (read one by one). */
export async function readAccountState(
  chain: BundlerChain,
  q: {
    entryPoint: Address
    sender: Address
    key: bigint
    factory: Address | null
    paymaster: Address | null
  },
): Promise<AccountState | null> {
  const data =
    `0x${addressWord(q.entryPoint)}${addressWord(q.sender)}${word(q.key)}${addressWord(q.factory)}${addressWord(q.paymaster)}` as Hex
  let out: Awaited<ReturnType<BundlerChain['call']>>
  try {
    out = await chain.call(
      { to: READER_ADDRESS, data },
      { [READER_ADDRESS]: { code: READER_CODE } },
      'latest',
      {
        light: true,
      },
    )
  } catch {
    return null
  }
  if (!out.ok || out.data.length !== 2 + 5 * 64) return null
  const w = (i: number) => BigInt(`0x${out.data.slice(2 + i * 64, 2 + (i + 1) * 64)}`)
  return {
    senderDeployed: w(0) > 0n,
    factoryDeployed: w(1) > 0n,
    paymasterDeployed: w(2) > 0n,
    nonce: w(3),
    deposit: w(4),
  }
}
