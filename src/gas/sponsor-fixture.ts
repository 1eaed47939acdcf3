import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createWalletClient, decodeErrorResult, type Hex, http, type TransactionReceipt } from 'viem'
import { entryPoint06Abi, entryPoint07Abi } from 'viem/account-abstraction'
import { privateKeyToAccount } from 'viem/accounts'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import type { StorageBackend } from '../../test/helpers/storage.ts'
import {
  type BundlerFixture,
  deployToken,
  mintData,
  NETWORK,
  startBundlerFixture,
  type TestAccount,
  withPaymaster,
} from '../bundler/bundler-fixture.ts'
import { toRpcUserOperation } from '../bundler/schema.ts'
import type { EntryPointVersion, UserOperation } from '../bundler/types.ts'
import { encodeHandleOps } from '../bundler/userop.ts'
import {
  type AccountAbstractionDeployment,
  ensureAccountAbstraction,
  findPaymasterV06,
} from '../devnet/account-abstraction.ts'
import { HalyardError } from '../errors.ts'
import { createLogger } from '../logger.ts'
import { StaticPriceSource } from '../prices/sources.ts'
import type { Storage } from '../storage/database.ts'
import type { Address } from '../types.ts'
import { PolicyService } from './policy-service.ts'
import { PolicyStore } from './policy-store.ts'
import { NO_CEILINGS } from './sponsor-ceilings.ts'
import { type SponsorNetworkSpec, type SponsorResult, SponsorService } from './sponsor-service.ts'
import { type SettlementNetwork, SponsorSettlement } from './sponsor-settlement.ts'

/**
 * Sponsorship tests on the bundler's devnet fixture (anvil with dev mode's ERC-4337 contracts,
 * both VerifyingPaymasters, permissionless.js SimpleAccounts) and a migrated database. Ops
 * are mined by a direct `handleOps` from an anvil account, so a test shows what the EntryPoint
 * itself accepts.
 */

export { NETWORK }
export const ACCOUNT = 'acct_sponsor_test'
/** The dev price of the native currency in these tests (USD). */
export const ETH_USD = '2000'

/** anvil's 5th default key: sends handleOps (the bundler's executors use others). */
const SUBMITTER_KEY = '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a' as Hex

/** The HalyardError `p` rejects with (a sponsorship refusal carries its rule); anything else fails. */
export async function refusal(p: Promise<unknown>): Promise<HalyardError & { rule?: string }> {
  try {
    await p
  } catch (err) {
    if (err instanceof HalyardError) return err
    throw err
  }
  throw new Error('expected a refusal')
}

export interface Clock {
  ms: number | null
}

export interface SponsorFixture extends BundlerFixture {
  paymasterV06: Address
  token: Address
  clock: Clock
  sponsorSpec(overrides?: Partial<SponsorNetworkSpec>): SponsorNetworkSpec
  sponsorService(opts?: {
    storage?: Storage
    maxBatch?: number
    spec?: Partial<SponsorNetworkSpec>
  }): SponsorService
  policyService(storage?: Storage): PolicyService
  settlementNetwork(): SettlementNetwork
  settlement(svc: SponsorService, storage?: Storage): SponsorSettlement
  /** handleOps([op]) from an anvil account; the receipt, or the EntryPoint's revert reason. */
  handleOps(op: UserOperation): Promise<TransactionReceipt>
  handleOpsRevert(op: UserOperation): Promise<string>
  /** An op of `acct` minting to itself, with fixed generous gas and current fees. */
  mintOp(acct: TestAccount, opts?: { nonceKey?: bigint; amount?: bigint }): Promise<UserOperation>
}

export async function startSponsorFixture(backend: StorageBackend): Promise<SponsorFixture> {
  const fx = await startBundlerFixture(backend)
  const paymasterV06 = await findPaymasterV06(fx.client, fx.paymasterSigner.address.toLowerCase() as Address)
  if (!paymasterV06) throw new Error('dev mode did not deploy the VerifyingPaymaster v0.6')
  const token = await deployToken(fx)
  const clock: Clock = { ms: null }
  const submitter = createWalletClient({
    transport: http(fx.anvil.url),
    account: privateKeyToAccount(SUBMITTER_KEY),
  })
  const sponsorSpec = (overrides: Partial<SponsorNetworkSpec> = {}): SponsorNetworkSpec => ({
    slug: NETWORK,
    chainId: fx.anvil.chainId,
    rpc: fx.rpc,
    paymasters: [
      { version: 'v07', entryPoint: fx.aa.entryPoints.v07, paymaster: fx.aa.paymaster },
      { version: 'v06', entryPoint: fx.aa.entryPoints.v06, paymaster: paymasterV06 },
    ],
    prices: new StaticPriceSource({ native: ETH_USD }),
    // The policies' own rules are under test here; the operator's ceilings (and their
    // defaults) are sponsor-ceilings.test.ts's, which sets them.
    ceilings: NO_CEILINGS,
    ...overrides,
  })
  const services: SponsorSettlement[] = []
  const settlementNetwork = (): SettlementNetwork => ({
    slug: NETWORK,
    chainId: fx.anvil.chainId,
    rpc: fx.rpc,
    paymasters: [
      { entryPoint: fx.aa.entryPoints.v07, version: 'v07', paymaster: fx.aa.paymaster },
      { entryPoint: fx.aa.entryPoints.v06, version: 'v06', paymaster: paymasterV06 },
    ],
    startLookback: 10_000,
  })
  const handleOpsData = (op: UserOperation) => ({
    to: fx.aa.entryPoints[op.version],
    data: encodeHandleOps([op], submitter.account.address.toLowerCase() as Address),
  })
  return {
    ...fx,
    paymasterV06,
    token,
    clock,
    sponsorSpec,
    sponsorService(opts = {}) {
      return new SponsorService({
        storage: opts.storage ?? fx.storage,
        networks: [sponsorSpec(opts.spec)],
        signer: fx.paymasterSigner,
        now: () => clock.ms ?? Date.now(),
        depositTtlMs: 0,
        ...(opts.maxBatch !== undefined ? { maxBatch: opts.maxBatch } : {}),
      })
    },
    policyService(storage) {
      return new PolicyService(new PolicyStore((storage ?? fx.storage).db), (chain) => chain === NETWORK)
    },
    settlementNetwork,
    settlement(svc, storage) {
      const s = new SponsorSettlement({
        storage: storage ?? fx.storage,
        store: svc.store,
        networks: [settlementNetwork()],
        logger: createLogger('silent'),
        pollMs: 50,
      })
      services.push(s)
      return s
    },
    async handleOps(op) {
      const hash = await submitter.sendTransaction({ ...handleOpsData(op), gas: 3_000_000n, chain: null })
      return fx.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    },
    async handleOpsRevert(op) {
      try {
        await fx.client.call({ account: submitter.account.address, ...handleOpsData(op), gas: 3_000_000n })
      } catch (err) {
        const data = revertData(err)
        if (!data) throw err
        const decoded = decodeErrorResult({
          abi: op.version === 'v06' ? entryPoint06Abi : entryPoint07Abi,
          data,
        })
        return decoded.args?.map(String).join(' ') ?? decoded.errorName
      }
      throw new Error('handleOps did not revert')
    },
    async mintOp(acct, opts = {}) {
      const op = await acct.op({
        to: token,
        data: mintData(acct.address, opts.amount ?? 7n),
        ...(opts.nonceKey !== undefined ? { nonceKey: opts.nonceKey } : {}),
      })
      return {
        ...op,
        callGasLimit: 200_000n,
        verificationGasLimit: 600_000n,
        preVerificationGas: 100_000n,
        ...(await fx.fees()),
      }
    },
    async close() {
      await Promise.all(services.map((s) => s.stop()))
      await fx.close()
    },
  }
}

function revertData(err: unknown): Hex | null {
  for (let e: unknown = err; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    const d = (e as { data?: unknown }).data
    if (typeof d === 'string' && d.startsWith('0x')) return d as Hex
  }
  return null
}

/** The op with the sponsorship put into it (v0.7 fields or v0.6 paymasterAndData), unsigned. */
export function withSponsorship(op: UserOperation, r: SponsorResult): UserOperation {
  if (op.version === 'v06') return { ...op, paymasterAndData: r.paymasterAndData as Hex }
  return {
    ...withPaymaster(op, r.paymaster, {
      verification: BigInt(r.paymasterVerificationGasLimit),
      postOp: BigInt(r.paymasterPostOpGasLimit),
    }),
    paymasterData: r.paymasterData,
  }
}

/** The `POST /v1/gas/sponsor` request body for `op`. */
export function sponsorBody(op: UserOperation, policyId: string, version: EntryPointVersion = op.version) {
  const { signature: _s, paymasterAndData: _p, ...userOperation } = toRpcUserOperation(op)
  return {
    chain: NETWORK,
    policy_id: policyId,
    user_operation: userOperation,
    ...(version === 'v06' ? { entryPoint: '0x5ff137d4b0fdcd49dca30c7cf57e578a026d2789' } : {}),
  }
}

/**
 * A Halyard in dev mode on the fixture's anvil and storage, with a data dir of its own: dev
 * mode generates the paymaster signer there and deploys its paymasters, as `npm start` does.
 */
export async function startDevHalyard(
  fx: SponsorFixture,
  label: string,
): Promise<{
  h: TestHalyard
  dep: AccountAbstractionDeployment
  /** A tenant's key (every scope). */
  key: string
  /** A key of the operator's account (as `halyard dev` prints), and the admin token. */
  operatorKey: string
  adminToken: string
}> {
  const dataDir = mkdtempSync(path.join(tmpdir(), `halyard-${label}-`))
  const dep = await ensureAccountAbstraction(fx.anvil.url, dataDir)
  const operatorEmail = `operator-${label}-${randomBytes(4).toString('hex')}@test.local`
  const adminToken = randomBytes(24).toString('base64url')
  const h = await startTestHalyard({
    networks: [anvilNetwork(fx.anvil, { accountAbstraction: dep.config })],
    storage: fx.storage,
    devMode: true,
    env: { HALYARD_DATA_DIR: dataDir },
    extra: { operatorEmails: [operatorEmail], adminToken },
  })
  return {
    h,
    dep,
    key: await h.createKey(),
    operatorKey: await h.createKey({ email: operatorEmail }),
    adminToken,
  }
}
