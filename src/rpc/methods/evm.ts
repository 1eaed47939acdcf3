import { blockReceiptsPlan, immutable, locatedAt, logsPlan, pinnedAt } from '../cache-policy.ts'
import { m } from './row.ts'
import { BROADCAST_WRITE, type Family, historical, type MethodSpec, STICKY, WRITE } from './spec.ts'

/**
 * EVM JSON-RPC methods: one row each. Compute units sit on the spec's scale (section 8:
 * eth_blockNumber 1, eth_getStorageAt at a historical block 20), roughly proportional to the
 * work a node does (Alchemy's relative weights, divided down); a read pinned to a past block
 * (archive access) costs more than the same read at the head. Adding a method is adding a row.
 */

/** Filters live on the node that created them: one upstream, never shared or cached. */
const FILTER = { coalesce: false, upstream: STICKY } as const

const NO_KEYS = (name: string) =>
  m(name, 0, {
    label: 'other',
    refusal: `the method ${name} is not available: Halyard holds no keys; sign locally`,
  })

export const evmRows: readonly MethodSpec[] = [
  m('eth_chainId', 1, { cache: immutable }),
  m('net_version', 1, { cache: immutable }),
  m('net_listening', 1),
  m('web3_clientVersion', 1),
  m('eth_blockNumber', 1),
  m('eth_gasPrice', 1),
  m('eth_maxPriorityFeePerGas', 1),
  m('eth_blobBaseFee', 1),
  m('eth_syncing', 1),
  m('eth_accounts', 1),
  m('eth_protocolVersion', 1),
  m('eth_feeHistory', 2),
  m('eth_getBalance', historical(1, 2, 20), { cache: pinnedAt(1) }),
  m('eth_getCode', historical(1, 2, 20), { cache: pinnedAt(1) }),
  m('eth_getTransactionCount', historical(1, 2, 20), { cache: pinnedAt(1) }),
  m('eth_getStorageAt', historical(2, 2, 20), { cache: pinnedAt(2) }),
  m('eth_getProof', historical(2, 5, 25), { cache: pinnedAt(2) }),
  m('eth_call', historical(1, 3, 20), { cache: pinnedAt(1) }),
  m('eth_estimateGas', 10),
  m('eth_createAccessList', 10),
  m('eth_simulateV1', 30),
  m('eth_getBlockByNumber', 2, { cache: pinnedAt(0) }),
  m('eth_getBlockByHash', 2, { cache: locatedAt('number') }),
  m('eth_getBlockReceipts', 50, { cache: blockReceiptsPlan }),
  m('eth_getBlockTransactionCountByHash', 2),
  m('eth_getBlockTransactionCountByNumber', 2, { cache: pinnedAt(0) }),
  m('eth_getUncleCountByBlockHash', 2),
  m('eth_getUncleCountByBlockNumber', 2),
  m('eth_getUncleByBlockHashAndIndex', 2),
  m('eth_getUncleByBlockNumberAndIndex', 2),
  m('eth_getTransactionByHash', 2, { cache: locatedAt('blockNumber') }),
  m('eth_getTransactionByBlockHashAndIndex', 2, { cache: locatedAt('blockNumber') }),
  m('eth_getTransactionByBlockNumberAndIndex', 2, { cache: pinnedAt(0) }),
  m('eth_getTransactionReceipt', 2, { cache: locatedAt('blockNumber') }),
  // The range guard: checked against the network's limit, split when the upstream refuses.
  m('eth_getLogs', 10, { cache: logsPlan, run: (x, params) => x.logs.run(params) }),
  m('eth_newFilter', 2, FILTER),
  m('eth_newBlockFilter', 2, FILTER),
  m('eth_newPendingTransactionFilter', 2, FILTER),
  m('eth_getFilterChanges', 2, FILTER),
  m('eth_getFilterLogs', 10, FILTER),
  m('eth_uninstallFilter', 1, FILTER),
  // Writes need only rpc:write (DESIGN.md: "also needs nothing else").
  m('eth_sendRawTransaction', 10, { scope: 'rpc:write', upstream: BROADCAST_WRITE }),
  m('eth_sendRawTransactionSync', 10, { scope: 'rpc:write', upstream: WRITE }),
  // anvil executes it from any address, unsigned.
  m('eth_sendUnsignedTransaction', 20, { scope: 'rpc:write' }),
  m('eth_subscribe', 1, { ws: 'subscribe' }),
  m('eth_unsubscribe', 1, { ws: 'unsubscribe' }),
  NO_KEYS('eth_sign'),
  NO_KEYS('eth_signTransaction'),
  NO_KEYS('eth_sendTransaction'),
  NO_KEYS('eth_signTypedData_v4'),
  NO_KEYS('eth_coinbase'),
]

/**
 * The devnet methods that only read. Every other one changes the devnet for everyone on it
 * (code, balances, nonces, storage, mining, time, impersonation, the mempool, snapshots), so
 * it needs `rpc:write`; a method added by a later anvil is a write until listed here.
 * `anvil_dumpState` reads, but serialises the whole devnet: it stays with the writes.
 */
const DEVNET_READS = new Set([
  'anvil_nodeInfo',
  'anvil_metadata',
  'hardhat_metadata',
  'anvil_getAutomine',
  'hardhat_getAutomine',
  'anvil_getIntervalMining',
  'anvil_getGenesisTime',
  'anvil_getBlobByHash',
  'anvil_getBlobsByTransactionHash',
  'anvil_getBlobsByBlockId',
])

/**
 * Devnet methods that throw away what is deployed on the devnet for everyone (EntryPoints,
 * Multicall3, other users' contracts and transactions), change the chain id the upstream pool
 * verifies, or point the node at another URL: served only where the network's config sets
 * `devMethods.destructive: true`.
 */
const DEVNET_DESTRUCTIVE = new Set([
  'anvil_reset',
  'hardhat_reset',
  'anvil_loadState',
  'hardhat_loadState',
  'anvil_rollback',
  'anvil_reorg',
  'anvil_setChainId',
  'anvil_setRpcUrl',
])

/** Methods not in the rows (debug_*, trace_*, devnet helpers) are heavy by default. */
const UNLISTED_CU = 20

/**
 * Names outside the rows: other eth_/net_/web3_ methods are forwarded; debug/trace only where
 * the operator enables them; devnet helpers only on devnets. Anything else is -32601.
 */
export const evmFamilies: readonly Family[] = [
  { pattern: /^(eth|net|web3)_[A-Za-z0-9]+$/, spec: (name) => m(name, UNLISTED_CU, { label: 'other' }) },
  {
    pattern: /^(debug|trace)_[A-Za-z0-9]+$/,
    spec: (name) => m(name, UNLISTED_CU, { label: 'other', gate: 'debug' }),
  },
  {
    pattern: /^(anvil|hardhat|evm|ganache)_[A-Za-z0-9]+$/,
    spec: (name) =>
      m(name, UNLISTED_CU, {
        label: 'other',
        scope: DEVNET_READS.has(name) ? 'rpc:read' : 'rpc:write',
        gate: DEVNET_DESTRUCTIVE.has(name) ? 'devnet-destructive' : 'devnet',
      }),
  },
]
