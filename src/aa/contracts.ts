import { createRequire } from 'node:module'
import { parseAbi } from 'viem'
import { z } from 'zod'
import { hex } from '../chains/read-schemas.ts'
import type { Address, Hex } from '../types.ts'

/**
 * ERC-4337 contracts Halyard deploys (dev mode) and talks to: canonical addresses, the pinned
 * artifacts (`@account-abstraction/contracts` 0.7.0 and its 0.6.0 release under the npm alias
 * `@account-abstraction/contracts-v06`) and the ABI fragments the services call.
 */

export const ENTRY_POINT_V06: Address = '0x5ff137d4b0fdcd49dca30c7cf57e578a026d2789'
export const ENTRY_POINT_V07: Address = '0x0000000071727de22e5e9d8baf0edac6f37da032'

/** Arachnid's CREATE2 proxy (Arachnid/deterministic-deployment-proxy), pre-deployed by anvil: send `salt ‖ initCode`. */
export const DETERMINISTIC_DEPLOYER: Address = '0x4e59b44847b379578588920ca78fbf26c0b4956c'

/**
 * The salts eth-infinitism used with the deterministic deployer: with them the npm artifacts land
 * exactly on the canonical addresses (checked by computing the CREATE2 address before sending).
 * The factories use salt 0, which gives the factory addresses public tooling assumes
 * (permissionless: v0.7 `0x91E60e…8985`, v0.6 `0x9406Cc…6454`).
 */
export const ZERO_SALT: Hex = `0x${'00'.repeat(32)}`
export const ENTRY_POINT_V07_SALT: Hex = '0x90d8084deab30c2a37c45e8d47f49f2f7965183cb6990a98943ef94940681de3'

export type EntryPointVersion = 'v06' | 'v07'

const artifactSchema = z.object({
  contractName: z.string(),
  abi: z.array(z.unknown()),
  bytecode: hex,
  deployedBytecode: hex,
})

export interface Artifact {
  contractName: string
  bytecode: Hex
  deployedBytecode: Hex
}

const require = createRequire(import.meta.url)
const PACKAGES: Record<EntryPointVersion, string> = {
  v06: '@account-abstraction/contracts-v06',
  v07: '@account-abstraction/contracts',
}

/** A contract artifact from the pinned npm release of that EntryPoint version. */
export function artifact(version: EntryPointVersion, name: string): Artifact {
  const raw: unknown = require(`${PACKAGES[version]}/artifacts/${name}.json`)
  const a = artifactSchema.parse(raw)
  return {
    contractName: a.contractName,
    bytecode: a.bytecode,
    deployedBytecode: a.deployedBytecode,
  }
}

export const entryPointAbi = parseAbi([
  'function getNonce(address sender, uint192 key) view returns (uint256 nonce)',
  'function balanceOf(address account) view returns (uint256)',
  'function depositTo(address account) payable',
  'function getDepositInfo(address account) view returns ((uint256 deposit, bool staked, uint112 stake, uint32 unstakeDelaySec, uint48 withdrawTime) info)',
  'event AccountDeployed(bytes32 indexed userOpHash, address indexed sender, address factory, address paymaster)',
])

export const entryPointV07HandleOpsAbi = parseAbi([
  'struct PackedUserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; bytes32 accountGasLimits; uint256 preVerificationGas; bytes32 gasFees; bytes paymasterAndData; bytes signature; }',
  'function handleOps(PackedUserOperation[] ops, address beneficiary)',
  'function getUserOpHash(PackedUserOperation userOp) view returns (bytes32)',
])

export const simpleAccountFactoryAbi = parseAbi([
  'function createAccount(address owner, uint256 salt) returns (address ret)',
  'function getAddress(address owner, uint256 salt) view returns (address)',
  'function accountImplementation() view returns (address)',
])

export const simpleAccountAbi = parseAbi([
  'function initialize(address anOwner)',
  'function owner() view returns (address)',
  'function entryPoint() view returns (address)',
  'function execute(address dest, uint256 value, bytes func)',
  'event SimpleAccountInitialized(address indexed entryPoint, address indexed owner)',
])

export const verifyingPaymasterAbi = parseAbi([
  'function verifyingSigner() view returns (address)',
  'function entryPoint() view returns (address)',
  'function owner() view returns (address)',
  'function addStake(uint32 unstakeDelaySec) payable',
  'function deposit() payable',
])

/** `AccountDeployed(bytes32,address,address,address)`, emitted by the EntryPoint (v0.6 and v0.7). */
export const ACCOUNT_DEPLOYED_TOPIC: Hex =
  '0xd51a9c61267aa6196961883ecf5ff2da6619c37dac0fa92122513fb32c032d2d'
/** ERC-1967 `Upgraded(address)`: every proxy account emits it from its own address when constructed. */
export const UPGRADED_TOPIC: Hex = '0xbc7cd75a20ee27fd9adebab32041f755214dbc6bffa90cc0225b39da2e5c2d3b'
