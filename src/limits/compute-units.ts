/**
 * The one compute-unit table. Spec section 8 pins two points: `eth_blockNumber` costs 1 CU and
 * `eth_getStorageAt` at a historical block costs 20. Everything else sits on that scale,
 * roughly proportional to the work a node does (Alchemy's relative weights, divided down).
 * State reads pinned to a past block (archive access) cost more than the same read at the head.
 */

/** Block tags that read current state. Anything else (a number, a hash) is historical. */
const CURRENT_TAGS = new Set(['latest', 'pending', 'safe', 'finalized'])

interface EvmCost {
  readonly cu: number
  /** Cost when the block parameter names a past block; absent = same as `cu`. */
  readonly historicalCu?: number
  /** Index of the block parameter in `params`. */
  readonly blockParam?: number
}

const EVM_COSTS: Readonly<Record<string, EvmCost>> = {
  eth_chainId: { cu: 1 },
  net_version: { cu: 1 },
  net_listening: { cu: 1 },
  web3_clientVersion: { cu: 1 },
  eth_blockNumber: { cu: 1 },
  eth_gasPrice: { cu: 1 },
  eth_maxPriorityFeePerGas: { cu: 1 },
  eth_blobBaseFee: { cu: 1 },
  eth_syncing: { cu: 1 },
  eth_accounts: { cu: 1 },
  eth_protocolVersion: { cu: 1 },
  eth_feeHistory: { cu: 2 },
  eth_getBalance: { cu: 2, historicalCu: 20, blockParam: 1 },
  eth_getCode: { cu: 2, historicalCu: 20, blockParam: 1 },
  eth_getTransactionCount: { cu: 2, historicalCu: 20, blockParam: 1 },
  eth_getStorageAt: { cu: 2, historicalCu: 20, blockParam: 2 },
  eth_getProof: { cu: 5, historicalCu: 25, blockParam: 2 },
  eth_call: { cu: 3, historicalCu: 20, blockParam: 1 },
  eth_estimateGas: { cu: 10 },
  eth_createAccessList: { cu: 10 },
  eth_getBlockByNumber: { cu: 2 },
  eth_getBlockByHash: { cu: 2 },
  eth_getBlockReceipts: { cu: 50 },
  eth_getBlockTransactionCountByHash: { cu: 2 },
  eth_getBlockTransactionCountByNumber: { cu: 2 },
  eth_getUncleCountByBlockHash: { cu: 2 },
  eth_getUncleCountByBlockNumber: { cu: 2 },
  eth_getUncleByBlockHashAndIndex: { cu: 2 },
  eth_getUncleByBlockNumberAndIndex: { cu: 2 },
  eth_getTransactionByHash: { cu: 2 },
  eth_getTransactionByBlockHashAndIndex: { cu: 2 },
  eth_getTransactionByBlockNumberAndIndex: { cu: 2 },
  eth_getTransactionReceipt: { cu: 2 },
  eth_getLogs: { cu: 10 },
  eth_newFilter: { cu: 2 },
  eth_newBlockFilter: { cu: 2 },
  eth_newPendingTransactionFilter: { cu: 2 },
  eth_getFilterChanges: { cu: 2 },
  eth_getFilterLogs: { cu: 10 },
  eth_uninstallFilter: { cu: 1 },
  eth_sendRawTransaction: { cu: 10 },
  eth_sendRawTransactionSync: { cu: 10 },
  eth_subscribe: { cu: 1 },
  eth_unsubscribe: { cu: 1 },
  eth_simulateV1: { cu: 30 },
}

/**
 * WebSocket subscription pushes are charged by size: 1 CU per this many bytes delivered
 * (Alchemy's 0.04 CU per byte on Halyard's ten-times-smaller scale). `eth_subscribe` itself
 * costs its table entry above.
 */
export const PUSH_BYTES_PER_CU = 250

/** Methods not in the table (debug_*, trace_*, devnet helpers) are heavy by default. */
const DEFAULT_EVM_CU = 20

export function evmMethodCost(method: string, params: readonly unknown[]): number {
  const entry = EVM_COSTS[method]
  if (!entry) return DEFAULT_EVM_CU
  if (entry.historicalCu !== undefined && entry.blockParam !== undefined) {
    const block = params[entry.blockParam]
    if (block !== undefined && !(typeof block === 'string' && CURRENT_TAGS.has(block))) {
      return entry.historicalCu
    }
  }
  return entry.cu
}

const SOLANA_COSTS: Readonly<Record<string, number>> = {
  getHealth: 1,
  getVersion: 1,
  getSlot: 1,
  getBlockHeight: 1,
  getEpochInfo: 1,
  getLatestBlockhash: 1,
  getBalance: 2,
  getAccountInfo: 2,
  getMultipleAccounts: 5,
  getTokenAccountBalance: 2,
  getTokenAccountsByOwner: 10,
  getTokenSupply: 2,
  getTokenLargestAccounts: 20,
  getProgramAccounts: 50,
  getBlock: 10,
  getBlocks: 5,
  getTransaction: 3,
  getSignaturesForAddress: 10,
  getSignatureStatuses: 2,
  getFeeForMessage: 1,
  getRecentPrioritizationFees: 2,
  getMinimumBalanceForRentExemption: 1,
  getSupply: 5,
  getLargestAccounts: 50,
  isBlockhashValid: 1,
  simulateTransaction: 10,
  sendTransaction: 10,
  requestAirdrop: 10,
  getGenesisHash: 1,
  getIdentity: 1,
  getSlotLeader: 1,
  getFirstAvailableBlock: 1,
  getBlockTime: 2,
  getBlockCommitment: 2,
  getEpochSchedule: 1,
  getInflationRate: 1,
  getInflationGovernor: 1,
  getStakeMinimumDelegation: 1,
  getTransactionCount: 1,
  getVoteAccounts: 20,
  getClusterNodes: 10,
  getBlocksWithLimit: 5,
  getBlockProduction: 10,
  getRecentPerformanceSamples: 2,
  getHighestSnapshotSlot: 1,
  getMaxRetransmitSlot: 1,
  getMaxShredInsertSlot: 1,
  getTokenAccountsByDelegate: 10,
  minimumLedgerSlot: 1,
}

export function solanaMethodCost(method: string): number {
  return SOLANA_COSTS[method] ?? DEFAULT_EVM_CU
}

/** Whether the table prices this method by name (metrics label methods by it, others "other"). */
export function hasMethodCost(kind: 'evm' | 'solana', method: string): boolean {
  return kind === 'solana' ? Object.hasOwn(SOLANA_COSTS, method) : Object.hasOwn(EVM_COSTS, method)
}

/** A method's metric label: its name when the table prices it, else "other" (bounded series). */
export function methodLabel(kind: 'evm' | 'solana', method: string): string {
  return hasMethodCost(kind, method) ? method : 'other'
}

/** REST endpoints, by route pattern (Fastify's `routeOptions.url`). */
const ROUTE_COSTS: Readonly<Record<string, number>> = {
  'GET /v1/tokens/:chain/balances/:address': 20,
  'GET /v1/tokens/:chain/metadata/:contract': 5,
  'GET /v1/nfts/:chain/metadata/:contract/:token_id': 10,
  'GET /v1/nfts/:chain/collection/:contract': 10,
  'GET /v1/nfts/:chain/owned/:address': 20,
  'GET /v1/gas/:chain/prices': 2,
  'POST /v1/gas/sponsor': 20,
  'POST /v1/wallets/create': 5,
}

/** Management endpoints (keys, webhooks, policies listing) cost this much. */
const DEFAULT_ROUTE_CU = 1

export function routeCost(method: string, routeUrl: string): number {
  return ROUTE_COSTS[`${method} ${routeUrl}`] ?? DEFAULT_ROUTE_CU
}
