import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { toSimpleSmartAccount } from 'permissionless/accounts'
import {
  concat,
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  encodeFunctionData,
  http,
  type PublicClient,
  parseAbi,
  parseEther,
  toHex,
} from 'viem'
import type { UserOperation as ViemUserOperation } from 'viem/account-abstraction'
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts'
import type { StorageBackend, TestStorage } from '../../test/helpers/storage.ts'
import { artifact } from '../aa/contracts.ts'
import { FailoverPool } from '../chains/upstream-pool.ts'
import { type DevAccountAbstraction, ensureAccountAbstraction } from '../devnet/account-abstraction.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { rpc } from '../devnet/multicall3.ts'
import { paymasterSignerKeyFile } from '../gas/paymaster-key.ts'
import { createLogger } from '../logger.ts'
import { releaseAdvisoryLock, tryAdvisoryLock } from '../storage/session-lock.ts'
import type { Address, Hash, Hex } from '../types.ts'
import type { RpcCaller } from './chain.ts'
import { ANVIL_EXECUTOR_KEYS } from './executor.ts'
import { builderLockKey } from './network.ts'
import { parseUserOperation, toRpcUserOperation } from './schema.ts'
import { type BundlerNetworkSpec, BundlerService } from './service.ts'
import type {
  EntryPointRef,
  EntryPointVersion,
  RpcUserOperationReceipt,
  UserOperation,
  UserOperationV07,
} from './types.ts'
import { packV07 } from './userop.ts'

/**
 * A devnet for bundler tests: anvil (mining on every transaction) with the ERC-4337 contracts
 * dev mode deploys, a migrated database, and SimpleAccounts built with permissionless.js (the
 * client library users bring), so what the tests send is what a real client sends.
 */

export const NETWORK = 'ethereum-devnet'

export interface BundlerFixture {
  anvil: AnvilProcess
  client: PublicClient
  aa: DevAccountAbstraction
  storage: TestStorage
  paymasterSigner: PrivateKeyAccount
  /** The node, as the service calls it (wrap it to make the node misbehave). */
  rpc: RpcCaller
  entryPoint(version: EntryPointVersion): EntryPointRef
  spec(overrides?: Partial<BundlerNetworkSpec>): BundlerNetworkSpec
  /** A new service instance on the same database and chain (as after a restart). */
  service(overrides?: Partial<BundlerNetworkSpec>): BundlerService
  fees(): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }>
  fund(address: Address, wei?: bigint): Promise<void>
  /**
   * PostgreSQL: whether another session holds the network's builder lock. Probes the lock alone:
   * a builder round as the probe would bundle whatever waits whenever it got the lock.
   */
  builderLockHeld(): Promise<boolean>
  /** A new VerifyingPaymaster v0.7 for `signer`, with no deposit at the EntryPoint. */
  deployPaymaster(signer: Address): Promise<Address>
  close(): Promise<void>
}

export async function startBundlerFixture(backend: StorageBackend): Promise<BundlerFixture> {
  const anvil = await startAnvil()
  const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-bundler-'))
  const { config: aa } = await ensureAccountAbstraction(anvil.url, dataDir)
  const storage = await backend.open()
  const pool = new FailoverPool([{ url: anvil.url }], 20_000)
  const client = createPublicClient({ transport: http(anvil.url) })
  const logger = createLogger('silent')
  const services: BundlerService[] = []
  const entryPoint = (version: EntryPointVersion): EntryPointRef => ({
    address: aa.entryPoints[version],
    version,
  })
  const spec = (overrides: Partial<BundlerNetworkSpec> = {}): BundlerNetworkSpec => ({
    slug: NETWORK,
    chainId: anvil.chainId,
    rpc: pool,
    entryPoints: [entryPoint('v07'), entryPoint('v06')],
    executorKeys: [ANVIL_EXECUTOR_KEYS[1] as Hex],
    idleMs: 50,
    pollMs: 20,
    // As dev mode runs anvil: one EVM call at a time, the queued eth_calls batched (chain.ts).
    maxConcurrentExecutions: 1,
    ...overrides,
  })
  return {
    anvil,
    client,
    aa,
    storage,
    rpc: pool,
    paymasterSigner: privateKeyToAccount(readFileSync(paymasterSignerKeyFile(dataDir), 'utf8').trim() as Hex),
    entryPoint,
    spec,
    service(overrides) {
      const s = new BundlerService({ storage, networks: [spec(overrides)], logger, lockRetryMs: 50 })
      services.push(s)
      return s
    },
    async fees() {
      const block = await client.getBlock({ blockTag: 'latest' })
      const tip = 1_000_000_000n
      return { maxFeePerGas: (block.baseFeePerGas ?? 0n) * 2n + tip, maxPriorityFeePerGas: tip }
    },
    async fund(address, wei = parseEther('1')) {
      await rpc(anvil.url, 'anvil_setBalance', [address, toHex(wei)])
    },
    builderLockHeld: () =>
      storage.db.connection().execute(async (conn) => {
        if (!(await tryAdvisoryLock(conn, builderLockKey(NETWORK))).ok) return true
        await releaseAdvisoryLock(conn, builderLockKey(NETWORK))
        return false
      }),
    async deployPaymaster(signer) {
      const dev = createWalletClient({ transport: http(anvil.url), account: DEV_ACCOUNT })
      const hash = await dev.sendTransaction({
        data: concat([
          artifact('v07', 'VerifyingPaymaster').bytecode,
          encodeAbiParameters([{ type: 'address' }, { type: 'address' }], [aa.entryPoints.v07, signer]),
        ]),
        gas: 5_000_000n,
        chain: null,
      })
      const r = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
      if (!r.contractAddress) throw new Error('VerifyingPaymaster deployment failed')
      return r.contractAddress.toLowerCase() as Address
    },
    async close() {
      await Promise.all(services.map((s) => s.stop()))
      await pool.close()
      await storage.close()
      await anvil.stop()
    },
  }
}

const tokenAbi = parseAbi(['function mint(address to, uint256 amount)'])

/** A new DemoERC20 on the fixture's chain: the call the tests' ops make is a mint of it. */
export function deployToken(fx: BundlerFixture): Promise<Address> {
  return new Devnet(fx.anvil.url).deploy('DemoERC20', ['Bundled', 'BND', 18])
}

/** Calldata minting `amount` of a DemoERC20 to `to`. */
export function mintData(to: Address, amount = 1n): Hex {
  return encodeFunctionData({ abi: tokenAbi, functionName: 'mint', args: [to, amount] })
}

type SimpleAccount = Awaited<ReturnType<typeof toSimpleSmartAccount>>

/** Gas fields and fees of an op under construction (estimate fills them in). */
export interface OpGas {
  callGasLimit: bigint
  verificationGasLimit: bigint
  preVerificationGas: bigint
  maxFeePerGas: bigint
  maxPriorityFeePerGas: bigint
  paymasterVerificationGasLimit?: bigint
  paymasterPostOpGasLimit?: bigint
}

export const ZERO_GAS: OpGas = {
  callGasLimit: 0n,
  verificationGasLimit: 0n,
  preVerificationGas: 0n,
  maxFeePerGas: 0n,
  maxPriorityFeePerGas: 0n,
}

/** A SimpleAccount (v0.6 or v0.7) of a fresh owner, as permissionless.js builds and signs it. */
export class TestAccount {
  readonly version: EntryPointVersion
  readonly account: SimpleAccount
  readonly owner: PrivateKeyAccount
  readonly address: Address
  private readonly fx: BundlerFixture

  private constructor(parts: {
    version: EntryPointVersion
    account: SimpleAccount
    owner: PrivateKeyAccount
    address: Address
    fx: BundlerFixture
  }) {
    this.version = parts.version
    this.account = parts.account
    this.owner = parts.owner
    this.address = parts.address
    this.fx = parts.fx
  }

  static async create(fx: BundlerFixture, version: EntryPointVersion): Promise<TestAccount> {
    const owner = privateKeyToAccount(generatePrivateKey())
    const account = await toSimpleSmartAccount({
      client: fx.client,
      owner,
      factoryAddress: fx.aa.simpleAccountFactory[version],
      entryPoint: { address: fx.aa.entryPoints[version], version: version === 'v06' ? '0.6' : '0.7' },
    })
    const address = (await account.getAddress()).toLowerCase() as Address
    return new TestAccount({ version, account, owner, address, fx })
  }

  async deployed(): Promise<boolean> {
    const code = await this.fx.client.getCode({ address: this.address })
    return code !== undefined && code !== '0x'
  }

  /** An op calling `to` with `value` (stub signature), deploying the account if it is not yet. */
  async op(opts: {
    to: Address
    value?: bigint
    data?: Hex
    nonceKey?: bigint
    gas?: OpGas
  }): Promise<UserOperation> {
    const callData = await this.account.encodeCalls([
      { to: opts.to, value: opts.value ?? 0n, data: opts.data ?? '0x' },
    ])
    const key = opts.nonceKey ?? 0n
    const nonce = await this.account.getNonce({ key })
    const factoryArgs = (await this.deployed()) ? {} : await this.account.getFactoryArgs()
    const gas = opts.gas ?? ZERO_GAS
    const signature = await this.account.getStubSignature()
    const raw: Record<string, unknown> = {
      sender: this.address,
      nonce: toHex(nonce),
      callData,
      callGasLimit: toHex(gas.callGasLimit),
      verificationGasLimit: toHex(gas.verificationGasLimit),
      preVerificationGas: toHex(gas.preVerificationGas),
      maxFeePerGas: toHex(gas.maxFeePerGas),
      maxPriorityFeePerGas: toHex(gas.maxPriorityFeePerGas),
      signature,
    }
    if (this.version === 'v06') {
      raw.initCode = factoryArgs.factory
        ? concat([factoryArgs.factory, factoryArgs.factoryData as Hex])
        : '0x'
      raw.paymasterAndData = '0x'
    } else if (factoryArgs.factory) {
      raw.factory = factoryArgs.factory
      raw.factoryData = factoryArgs.factoryData
    }
    return parseUserOperation(raw, this.version)
  }

  /** The op signed by the owner (permissionless computes the userOpHash on its own). */
  async sign(op: UserOperation): Promise<UserOperation> {
    const signature = await this.account.signUserOperation({
      ...(toViem(op) as ViemUserOperation<'0.7'>),
      chainId: this.fx.anvil.chainId,
    })
    return { ...op, signature }
  }
}

/** viem's UserOperation object for `op` (bigints, optional fields left out). */
export function toViem(op: UserOperation): Record<string, unknown> {
  const rpcOp = toRpcUserOperation(op)
  return Object.fromEntries(
    Object.entries(rpcOp).map(([k, v]) => [k, /GasLimit$|Gas$|PerGas$|^nonce$/.test(k) ? BigInt(v) : v]),
  )
}

/** A v0.7 op with `paymaster` set (gas limits as given, data empty until paymasterData fills it). */
export function withPaymaster(
  op: UserOperation,
  paymaster: Address,
  gas: { verification?: bigint; postOp?: bigint } = {},
): UserOperationV07 {
  if (op.version !== 'v07') throw new Error('withPaymaster takes a v0.7 op')
  return {
    ...op,
    paymaster,
    paymasterVerificationGasLimit: gas.verification ?? 0n,
    paymasterPostOpGasLimit: gas.postOp ?? 0n,
    paymasterData: '0x',
  }
}

const verifyingPaymasterAbi = parseAbi([
  'struct PackedUserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; bytes32 accountGasLimits; uint256 preVerificationGas; bytes32 gasFees; bytes paymasterAndData; bytes signature; }',
  'function getHash(PackedUserOperation userOp, uint48 validUntil, uint48 validAfter) view returns (bytes32)',
])

/**
 * VerifyingPaymaster v0.7 data for `op` (paymaster fields set): abi.encode(validUntil,
 * validAfter) ‖ signature over the paymaster's own getHash, by `signer` (a random key gives
 * a well-formed stub whose check fails without reverting).
 */
export async function paymasterData(
  fx: BundlerFixture,
  op: UserOperation,
  signer: PrivateKeyAccount,
  window: { validUntil?: number; validAfter?: number } = {},
): Promise<Hex> {
  if (op.version !== 'v07' || !op.paymaster) throw new Error('paymasterData needs a v0.7 op with a paymaster')
  const validUntil = window.validUntil ?? 0
  const validAfter = window.validAfter ?? 0
  const times = encodeAbiParameters([{ type: 'uint48' }, { type: 'uint48' }], [validUntil, validAfter])
  const hash = await fx.client.readContract({
    address: op.paymaster,
    abi: verifyingPaymasterAbi,
    functionName: 'getHash',
    args: [
      packV07({ ...op, paymasterData: concat([times, `0x${'00'.repeat(65)}`]) }),
      validUntil,
      validAfter,
    ],
  })
  return concat([times, await signer.signMessage({ message: { raw: hash } })])
}

/** Fills in the service's estimate exactly (no margin of our own) and signs. */
export async function estimatedAndSigned(
  fx: BundlerFixture,
  svc: BundlerService,
  acct: TestAccount,
  op: UserOperation,
): Promise<UserOperation> {
  const withFees = { ...op, ...(await fx.fees()) }
  const est = await svc.estimateUserOperationGas(NETWORK, withFees, fx.entryPoint(acct.version).address)
  const filled: UserOperation = {
    ...withFees,
    callGasLimit: BigInt(est.callGasLimit),
    verificationGasLimit: BigInt(est.verificationGasLimit),
    preVerificationGas: BigInt(est.preVerificationGas),
  }
  if (filled.version === 'v07' && filled.paymaster) {
    filled.paymasterVerificationGasLimit = BigInt(est.paymasterVerificationGasLimit ?? '0x0')
    filled.paymasterPostOpGasLimit = BigInt(est.paymasterPostOpGasLimit ?? '0x0')
    filled.paymasterData = await paymasterData(fx, filled, fx.paymasterSigner)
  }
  return acct.sign(filled)
}

/** Runs builder rounds until the op has a receipt (automining anvil: two rounds). */
export async function minedReceipt(svc: BundlerService, hash: Hash): Promise<RpcUserOperationReceipt> {
  for (let round = 0; round < 10; round++) {
    const r = await svc.getUserOperationReceipt(NETWORK, hash)
    if (r) return r
    await svc.bundleNow(NETWORK)
  }
  throw new Error(`${hash} was not mined after 10 builder rounds`)
}

/** A funded account of `version`, deployed by its first op (a mint of `token`) mined through `svc`. */
export async function deployedAccount(
  fx: BundlerFixture,
  svc: BundlerService,
  version: EntryPointVersion,
  token: Address,
): Promise<TestAccount> {
  const acct = await TestAccount.create(fx, version)
  await fx.fund(acct.address)
  const op = await estimatedAndSigned(
    fx,
    svc,
    acct,
    await acct.op({ to: token, data: mintData(acct.address) }),
  )
  await minedReceipt(svc, await svc.sendUserOperation(NETWORK, op, fx.entryPoint(version).address))
  return acct
}
