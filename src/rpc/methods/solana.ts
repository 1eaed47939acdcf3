import { immutable, slotPinnedAt, solanaTransactionPlan } from '../cache-policy.ts'
import { m } from './row.ts'
import { BROADCAST_WRITE, type MethodSpec } from './spec.ts'

/**
 * Solana JSON-RPC methods, on the same compute-unit scale as EVM. What is not a row is not
 * served (-32601). Only finalized, slot-pinned reads are cached; never balances, blockhashes
 * or fees.
 */
export const solanaRows: readonly MethodSpec[] = [
  m('getHealth', 1),
  m('getVersion', 1),
  m('getSlot', 1),
  m('getBlockHeight', 1),
  m('getEpochInfo', 1),
  m('getLatestBlockhash', 1),
  m('getBalance', 2),
  m('getAccountInfo', 2),
  m('getMultipleAccounts', 5),
  m('getTokenAccountBalance', 2),
  m('getTokenAccountsByOwner', 10),
  m('getTokenSupply', 2),
  m('getTokenLargestAccounts', 20),
  m('getProgramAccounts', 50),
  m('getBlock', 10, { cache: slotPinnedAt(0, 1) }),
  m('getBlocks', 5, { cache: slotPinnedAt(1, 2) }),
  m('getTransaction', 3, { cache: solanaTransactionPlan }),
  m('getSignaturesForAddress', 10),
  m('getSignatureStatuses', 2),
  m('getFeeForMessage', 1),
  m('getRecentPrioritizationFees', 2),
  m('getMinimumBalanceForRentExemption', 1),
  m('getSupply', 5),
  m('getLargestAccounts', 50),
  m('isBlockhashValid', 1),
  m('simulateTransaction', 10),
  m('sendTransaction', 10, { scope: 'rpc:write', upstream: BROADCAST_WRITE }),
  // Each airdrop is its own call: two identical requests are two airdrops.
  m('requestAirdrop', 10, { coalesce: false }),
  m('getGenesisHash', 1, { cache: immutable }),
  m('getIdentity', 1),
  m('getSlotLeader', 1),
  m('getFirstAvailableBlock', 1),
  m('getBlockTime', 2, { cache: slotPinnedAt(0, 1) }),
  m('getBlockCommitment', 2),
  m('getEpochSchedule', 1),
  m('getInflationRate', 1),
  m('getInflationGovernor', 1),
  m('getStakeMinimumDelegation', 1),
  m('getTransactionCount', 1),
  m('getVoteAccounts', 20),
  m('getClusterNodes', 10),
  m('getBlocksWithLimit', 5),
  m('getBlockProduction', 10),
  m('getRecentPerformanceSamples', 2),
  m('getHighestSnapshotSlot', 1),
  m('getMaxRetransmitSlot', 1),
  m('getMaxShredInsertSlot', 1),
  m('getTokenAccountsByDelegate', 10),
  m('minimumLedgerSlot', 1),
]
