import { blockReceiptsPlan, immutable, locatedAt, logsPlan, pinnedAt } from '../cache-policy.ts'
import { m } from './row.ts'
import { BROADCAST_WRITE, type Family, historical, type MethodSpec, STICKY, WRITE } from './spec.ts'

/**
 * EVM JSON-RPC methods: one row each. Compute units sit on one scale
 * (eth_blockNumber 1, eth_getStorageAt at a historical block 20), roughly proportional to the
 * work a node does (Alchemy's relative weights, divided down); a read pinned to a past block
 * (archive access) costs more than the same read at the head. Adding a method is adding a row.
 */

/** Filters live on the node that created them: one upstream, never shared or cached. */
const FILTER = { coalesce: false, upstream: STICKY } as const

/**
 * Methods that would sign or send with keys the node holds. Halyard holds no keys, and the
 * node's own accounts are not the tenant's: on a devnet they are anvil's dev accounts, one of
 * which is the bundler's executor. Refused for everyone, whatever the key's scopes.
 */
const NO_KEYS = (name: string) =>
  m(name, 0, {
    label: 'other',
    refusal: `the method ${name} is not available: Halyard holds no keys; sign locally`,
  })

export const evmRows: readonly MethodSpec[] = [
  m('eth_chainId', 1, { cache: immutable }),
  m('net_version', 1, { cache: immutable }),
  m('net_listening', 1),
  m('net_peerCount', 1),
  m('web3_clientVersion', 1),
  // Keccak-256 of the given bytes, computed by the node: no state at all.
  m('web3_sha3', 1),
  m('eth_blockNumber', 1),
  m('eth_gasPrice', 1),
  m('eth_maxPriorityFeePerGas', 1),
  m('eth_blobBaseFee', 1),
  m('eth_syncing', 1),
  m('eth_accounts', 1),
  m('eth_protocolVersion', 1),
  m('eth_mining', 1),
  m('eth_hashrate', 1),
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
  // Simulations of several calls or a bundle (reth/erigon, Flashbots): nothing is sent.
  m('eth_callMany', 30),
  m('eth_callBundle', 30),
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
  // Erigon/reth/Otterscan: the transaction a sender sent with a nonce. A read, listed because
  // its name holds "send" (NEVER_READ below).
  m('eth_getTransactionBySenderAndNonce', 2),
  // The range guard: checked against the network's limit, split when the upstream refuses.
  m('eth_getLogs', 10, { cache: logsPlan, run: (x, params) => x.logs.run(params) }),
  m('eth_newFilter', 2, FILTER),
  m('eth_newBlockFilter', 2, FILTER),
  m('eth_newPendingTransactionFilter', 2, FILTER),
  m('eth_getFilterChanges', 2, FILTER),
  m('eth_getFilterLogs', 10, FILTER),
  m('eth_uninstallFilter', 1, FILTER),
  // Writes: transactions the caller signed. They need rpc:write and nothing else (the signature
  // is the authority); every eth_send* not listed here is refused (below).
  m('eth_sendRawTransaction', 10, { scope: 'rpc:write', upstream: BROADCAST_WRITE }),
  m('eth_sendRawTransactionSync', 10, { scope: 'rpc:write', upstream: WRITE }),
  // A signed transaction with inclusion conditions (the ERC-4337 bundlers' method on L2s).
  m('eth_sendRawTransactionConditional', 10, { scope: 'rpc:write', upstream: WRITE }),
  // Bundles of signed transactions (Flashbots-style builders).
  m('eth_sendBundle', 10, { scope: 'rpc:write', upstream: WRITE }),
  m('eth_sendPrivateTransaction', 10, { scope: 'rpc:write', upstream: WRITE }),
  m('eth_sendPrivateRawTransaction', 10, { scope: 'rpc:write', upstream: WRITE }),
  m('eth_cancelPrivateTransaction', 10, { scope: 'rpc:write', upstream: WRITE }),
  // anvil executes it from any address, unsigned: only where every account is a test account.
  m('eth_sendUnsignedTransaction', 20, { scope: 'rpc:write', gate: 'devnet' }),
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
  // A snapshot is harmless alone, but the revert to it rolls the chain back for everyone (anvil
  // takes the anvil_ names as aliases of the evm_ ones).
  'evm_snapshot',
  'evm_revert',
  'anvil_snapshot',
  'anvil_revert',
  // Empty the mempool of every user's pending transactions (with a block time they wait there).
  'anvil_dropAllTransactions',
  'anvil_removePoolTransactions',
])

/** Methods not in the rows (debug_*, trace_*, devnet helpers) are heavy by default. */
const UNLISTED_CU = 20

/**
 * Words that say a method sends, signs or changes the node. A name containing one is never
 * admitted by a read family rule, whatever its prefix (`eth_getSignerX`, `debug_traceSetHead`).
 */
const NEVER_READ =
  /send|sign|submit|set|import|unlock|personal|admin|miner|write|delete|remove|kill|start|stop|profile|file|free|compact|reset|rewind|insert|push|cancel/i

/**
 * The `debug_*` and `trace_*` methods a network with `debugMethods: true` serves, all reads:
 * - `debug_trace*`: geth's tracers re-execute a transaction, call or block on a copy of the state
 *   and return the trace (geth "debug" namespace); the `*ToFile` variants write files on the
 *   node's disk and are excluded (NEVER_READ: "file");
 * - the raw getters return what the node stores as RLP (EIP-2718 transactions, headers, blocks,
 *   receipts) and `debug_getBadBlocks` the blocks the node rejected;
 * - `debug_storageRangeAt` reads a contract's storage at a block (Hardhat/Foundry debuggers);
 * - the Parity/OpenEthereum `trace_*` reads (also erigon, reth, Nethermind): traces of mined
 *   blocks and transactions, `trace_filter`, and replays/simulations on a copy of the state
 *   (`trace_call`, `trace_callMany`, `trace_replay*`). `trace_rawTransaction` traces a signed
 *   transaction without sending it ("does not broadcast"), so it is a read too.
 * Every other debug_ method is refused: they change or profile the node (setHead, setGCPercent,
 * CPU/block/mutex profiles, Go traces, freeOSMemory, chaindbCompact, writing files).
 */
const DEBUG_READS = new Set([
  'debug_getRawBlock',
  'debug_getRawHeader',
  'debug_getRawReceipts',
  'debug_getRawTransaction',
  'debug_getBadBlocks',
  'debug_storageRangeAt',
  'trace_block',
  'trace_transaction',
  'trace_filter',
  'trace_get',
  'trace_call',
  'trace_callMany',
  'trace_rawTransaction',
  'trace_replayTransaction',
  'trace_replayBlockTransactions',
])
const DEBUG_TRACE = /^debug_trace[A-Z][A-Za-z0-9]*$/

const debugRead = (name: string) => m(name, UNLISTED_CU, { label: 'other', gate: 'debug' })

const refusedFamily = (name: string, why: string) =>
  m(name, 0, { label: 'other', refusal: `the method ${name} is not available: ${why}` })

/**
 * Names outside the rows. Each is exactly one of read, write or refused: nothing unlisted is
 * forwarded unless a read-only rule below admits it; anything else is -32601 naming it.
 */
export const evmFamilies: readonly Family[] = [
  // Would sign with, or send from, the node's own accounts, whatever the suffix
  // (eth_signTypedData, _v1, _v3, _v4, eth_sendTransactionSync, …).
  { pattern: /^eth_sign[A-Za-z0-9_]*$/, spec: NO_KEYS, what: 'Refused: would sign with keys the node holds' },
  {
    pattern: /^eth_sendTransaction[A-Za-z0-9_]*$/,
    spec: NO_KEYS,
    what: "Refused: would send from the node's own accounts",
  },
  // Writes Halyard does not list (an eth_send*/eth_submit* it does not know) are refused rather
  // than forwarded with a scope guessed from the name.
  {
    pattern: /^eth_(send|submit)[A-Za-z0-9_]*$/,
    what: 'Refused: writes Halyard does not list are not forwarded',
    spec: (name) =>
      refusedFamily(
        name,
        'Halyard does not forward this write (signed transactions: eth_sendRawTransaction; UserOperations: the bundler endpoint)',
      ),
  },
  // eth_get*: the Ethereum JSON-RPC specification (execution-apis) and every client name their
  // state reads eth_get… (getBalance, getBlock…, getHeaderBy…, getRawTransaction…, getProof, …);
  // none of them changes anything.
  {
    pattern: /^eth_get[A-Z][A-Za-z0-9]*$/,
    what: `Other eth_get* state reads, forwarded (rpc:read, ${UNLISTED_CU} CU); a name that says it sends, signs or changes the node is refused`,
    spec: (name) =>
      NEVER_READ.test(name.slice(4))
        ? refusedFamily(name, 'Halyard does not forward this method')
        : m(name, UNLISTED_CU, { label: 'other' }),
  },
  // Served only where the operator turns debugMethods on, and then only the reads above.
  {
    pattern: /^(debug|trace)_[A-Za-z0-9_]+$/,
    what: `debug_trace* and the listed debug_/trace_ reads, where the network's config sets debugMethods: true (rpc:read, ${UNLISTED_CU} CU); the others are refused`,
    known: [
      ...DEBUG_READS,
      'debug_traceTransaction',
      'debug_traceCall',
      'debug_traceBlockByNumber',
      'debug_traceBlockByHash',
    ],
    spec: (name) =>
      DEBUG_READS.has(name) || (DEBUG_TRACE.test(name) && !NEVER_READ.test(name.slice(11)))
        ? debugRead(name)
        : refusedFamily(
            name,
            'of the debug_ and trace_ methods only the reads are forwarded (debug_trace*, debug_getRaw*, trace_block, trace_transaction, trace_filter, trace_call, …); the others change or profile the node',
          ),
  },
  {
    pattern: /^(anvil|hardhat|evm|ganache)_[A-Za-z0-9]+$/,
    what: `Devnet methods, on devnets only (${UNLISTED_CU} CU): the listed reads need rpc:read, every other one rpc:write; those that wipe or replace the devnet only where devMethods.destructive is true`,
    known: [
      ...DEVNET_READS,
      'evm_mine',
      'evm_increaseTime',
      'anvil_setBalance',
      'anvil_impersonateAccount',
      ...DEVNET_DESTRUCTIVE,
    ],
    spec: (name) =>
      m(name, UNLISTED_CU, {
        label: 'other',
        scope: DEVNET_READS.has(name) ? 'rpc:read' : 'rpc:write',
        gate: DEVNET_DESTRUCTIVE.has(name) ? 'devnet-destructive' : 'devnet',
      }),
  },
]
