import { toHex } from 'viem'
import { z } from 'zod'
import type { Network, NetworkRegistry } from '../chains/registry.ts'
import { type GasPriceService, gweiToWei } from '../gas/price-service.ts'
import { NOT_CONFIGURED } from '../gas/sponsor-routes.ts'
import type { SponsorService } from '../gas/sponsor-service.ts'
import { visibleTo } from '../http/access.ts'
import { answerJsonRpc } from '../http/jsonrpc-errors.ts'
import { RPC_INTERNAL_ERROR, RPC_METHOD_NOT_FOUND, RpcError, type RpcOutcome } from '../jsonrpc.ts'
import type { Logger } from '../logger.ts'
import { paramsTuple, parseParams } from '../rpc/methods/params.ts'
import { m } from '../rpc/methods/row.ts'
import type { ExecContext, MethodSpec } from '../rpc/methods/spec.ts'
import { isAddress } from '../types.ts'
import { parseEntryPoint, parseUserOperation } from './schema.ts'
import type { BundlerService } from './service.ts'

/**
 * What `@account-kit/infra` calls beyond ERC-4337 and ERC-7677 (its Alchemy transport and gas
 * manager middleware), served on the bundler endpoint and the compat root:
 * - `rundler_maxPriorityFeePerGas []` → hex: the gas price feature's "standard" tip;
 * - `alchemy_requestGasAndPaymasterAndData [{policyId, entryPoint, userOperation,
 *   dummySignature, overrides}]` → fees, gas limits and signed paymaster fields in one call:
 *   fees from the gas price feature, the ERC-7677 stub from the sponsorship service, gas from
 *   the bundler's estimate over the stubbed op, then the sponsorship signed over the final op
 *   (so the client must not change a gas field afterwards, as with Alchemy).
 */

const hexQty = z.string().regex(/^0x[0-9a-fA-F]{1,64}$/, 'must be a hex quantity')
/** Alchemy's override: an absolute hex value or `{multiplier}` of Halyard's estimate. */
const override = z.union([hexQty, z.object({ multiplier: z.number().positive().max(100) }).strict()])
const overrides = z
  .object({
    maxFeePerGas: override,
    maxPriorityFeePerGas: override,
    callGasLimit: override,
    verificationGasLimit: override,
    preVerificationGas: override,
    paymasterVerificationGasLimit: override,
    paymasterPostOpGasLimit: override,
  })
  .partial()
  .strict()

const requestParams = paramsTuple(
  [
    z.object({
      policyId: z.string().min(1).max(100),
      entryPoint: z.string().refine(isAddress, 'must be a 0x-prefixed 20-byte hex address'),
      userOperation: z.record(z.string(), z.unknown()),
      dummySignature: z.string().regex(/^0x([0-9a-fA-F]{2}){0,2048}$/, 'must be hex bytes'),
      overrides: overrides.optional(),
      webhookData: z.string().max(10_000).optional(),
      erc20Context: z
        .unknown()
        .refine((v) => v === undefined, 'ERC-20 gas payment is not served by Halyard (only sponsorship)')
        .optional(),
    }),
  ],
  '[{policyId, entryPoint, userOperation, dummySignature, overrides?}]',
)

type Override = z.infer<typeof override>

function apply(estimate: bigint, o: Override | undefined): bigint {
  if (o === undefined) return estimate
  if (typeof o === 'string') return BigInt(o)
  // Multiplier to four decimals in integers: 1.5 → ×15000/10000.
  return (estimate * BigInt(Math.round(o.multiplier * 10_000))) / 10_000n
}

export interface AccountKitDeps {
  gasPrices: GasPriceService
  sponsor: SponsorService | null
  bundler: BundlerService | null
  logger: Logger
  /** Which networks' policies a caller sees (http/access.ts visibleTo). */
  networks: NetworkRegistry
}

export function accountKitRows(deps: AccountKitDeps): MethodSpec[] {
  const { logger } = deps

  const tip = async (net: Network) =>
    gweiToWei((await deps.gasPrices.prices(net)).estimates.standard.max_priority_fee_gwei)

  const request = async (x: ExecContext, params: readonly unknown[]) => {
    const { sponsor, bundler } = deps
    if (!sponsor) throw new RpcError(RPC_METHOD_NOT_FOUND, NOT_CONFIGURED)
    if (!bundler) throw new RpcError(RPC_METHOD_NOT_FOUND, 'the bundler does not run on this network')
    if (!x.caller) throw new RpcError(RPC_INTERNAL_ERROR, 'internal error')
    const [p] = parseParams(requestParams, params)
    const net = x.network.slug
    const entryPoint = parseEntryPoint(p.entryPoint, bundler.supportedEntryPoints(net))
    const version = bundler.entryPointVersion(net, entryPoint)
    const o = p.overrides ?? {}
    const prices = await deps.gasPrices.prices(x.network)
    const priority = apply(gweiToWei(prices.estimates.standard.max_priority_fee_gwei), o.maxPriorityFeePerGas)
    const fees = {
      maxPriorityFeePerGas: toHex(priority),
      maxFeePerGas: toHex(apply(gweiToWei(prices.estimates.standard.max_fee_gwei), o.maxFeePerGas)),
    }
    const chainId = bundler.chainId(net)
    const context = { policy_id: p.policyId }
    const base = { ...p.userOperation, ...fees, signature: p.dummySignature }
    // The stub checks the policy before any gas is estimated, and gives the paymaster fields
    // the estimate must run with.
    const stub = (await sponsor.getPaymasterStubData(visibleTo(x.caller, deps.networks), net, [
      base,
      entryPoint,
      chainId,
      context,
    ])) as Record<string, unknown>
    const { sponsor: _name, isFinal: _final, ...stubFields } = stub
    const estimating = parseUserOperation({ ...base, ...stubFields }, version, { estimating: true })
    const est = await bundler.estimateUserOperationGas(net, estimating, entryPoint)
    const gas: Record<string, string> = {
      callGasLimit: toHex(apply(BigInt(est.callGasLimit), o.callGasLimit)),
      verificationGasLimit: toHex(apply(BigInt(est.verificationGasLimit), o.verificationGasLimit)),
      preVerificationGas: toHex(apply(BigInt(est.preVerificationGas), o.preVerificationGas)),
    }
    if (version === 'v07') {
      const pmv = est.paymasterVerificationGasLimit ?? (stubFields.paymasterVerificationGasLimit as string)
      const pmp = est.paymasterPostOpGasLimit ?? (stubFields.paymasterPostOpGasLimit as string)
      gas.paymasterVerificationGasLimit = toHex(apply(BigInt(pmv), o.paymasterVerificationGasLimit))
      gas.paymasterPostOpGasLimit = toHex(apply(BigInt(pmp), o.paymasterPostOpGasLimit))
    }
    const final = { ...base, ...stubFields, ...gas }
    const signed = await sponsor.getPaymasterData(visibleTo(x.caller, deps.networks), net, [
      final,
      entryPoint,
      chainId,
      context,
    ])
    return { ...signed, ...gas, ...fees }
  }

  const run =
    (method: string, body: (x: ExecContext, params: readonly unknown[]) => Promise<unknown>) =>
    (x: ExecContext, params: readonly unknown[]): Promise<RpcOutcome> =>
      // What the bundler and the paymaster refuse keeps their codes; a node's error passes on.
      answerJsonRpc({ logger, what: method }, () => body(x, params))

  return [
    // A cached read of fee history: as cheap as eth_maxPriorityFeePerGas.
    m('rundler_maxPriorityFeePerGas', 1, {
      scope: 'bundler:send',
      run: run('rundler_maxPriorityFeePerGas', async (x) => toHex(await tip(x.network))),
    }),
    // Two pm_* calls (5 CU each) and an estimate (10 CU); per account, so never shared.
    m('alchemy_requestGasAndPaymasterAndData', 20, {
      scope: 'gas:manage',
      // Signs paymaster data (a reservation against the deposit), as pm_getPaymasterData.
      access: 'write',
      coalesce: false,
      params: requestParams,
      run: run('alchemy_requestGasAndPaymasterAndData', request),
    }),
  ]
}
