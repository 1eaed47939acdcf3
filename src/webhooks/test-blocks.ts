import type { IndexedBlock } from '../indexer/types.ts'
import type { Address, Hash } from '../types.ts'

/** Test-only: indexed blocks made of native value transfers, for matcher tests. */

const FROM = '0x00000000000000000000000000000000000000f0' as Address
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hash

/** Block `n` of `network` with one native transfer (value 1) to each of `to`. */
export function nativeTransfersBlock(network: string, n: number, to: readonly Address[]): IndexedBlock {
  return {
    network,
    chainId: 31337,
    number: BigInt(n),
    hash: hash(1000 + n),
    parentHash: hash(999 + n),
    timestamp: n,
    logs: [],
    transfers: [],
    transactions: to.map((t, i) => ({
      hash: hash(n * 100 + i),
      from: FROM,
      to: t,
      value: 1n,
      index: i,
      input: '0x' as const,
    })),
  }
}
