import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import type { Network } from '../chains/registry.ts'
import type { Charger } from '../http/charge.ts'
import { answerJsonRpc } from '../http/jsonrpc-errors.ts'
import { RPC_METHOD_NOT_FOUND, type RpcOutcome } from '../jsonrpc.ts'
import type { Logger } from '../logger.ts'
import { createRegistry } from '../rpc/methods/registry.ts'
import { m } from '../rpc/methods/row.ts'
import type { ExecContext, MethodAccess, MethodRegistry, MethodSpec } from '../rpc/methods/spec.ts'
import { defineJsonRpcRoute } from '../rpc/routes.ts'
import type { RpcService } from '../rpc/service.ts'
import { type Address, isAddress, toLowerAddress } from '../types.ts'
import type { StateOverride } from './chain.ts'
import { parseEntryPoint, parseUserOperation, parseUserOpHash } from './schema.ts'
import type { BundlerService } from './service.ts'
import { invalidFields, wire } from './types.ts'

/**
 * The ERC-4337 bundler (`POST /v1/bundler/{chain}/{network}`) as a JSON-RPC surface: registry
 * rows served by the shared endpoint (rpc/endpoint.ts), so envelope, batch, scope and charging
 * are /v1/rpc's. Nothing is coalesced or cached: a send is a write and an estimate depends on
 * the mempool. BundlerErrors map to JSON-RPC errors with their ERC-7769 code in one place
 * (http/jsonrpc-errors.ts). `debug_bundler_*` rows answer only on networks whose config enables them,
 * and only to the operator.
 */

const SCOPE = 'bundler:send' as const

const param = (params: readonly unknown[], i: number) => params[i]

const stateOverrideSchema = z.record(z.string(), z.record(z.string(), z.unknown()))

function parseStateOverride(raw: unknown): StateOverride | undefined {
  if (raw === undefined || raw === null) return undefined
  const r = stateOverrideSchema.safeParse(raw)
  if (!r.success) throw invalidFields('stateOverride (third param) must be an object of address → override')
  for (const a of Object.keys(r.data))
    if (!isAddress(a)) throw invalidFields(`stateOverride key ${a.slice(0, 60)} is not an address`)
  return r.data as StateOverride
}

function parseAddressParam(raw: unknown, name: string): Address {
  if (!isAddress(raw)) throw invalidFields(`${name} must be a 0x-prefixed 20-byte hex address`)
  return toLowerAddress(raw)
}

const reputationRows = z.array(
  z
    .object({
      address: z.string().refine(isAddress, 'must be an address'),
      opsSeen: z.union([z.number().int().min(0), z.string().regex(/^0x[0-9a-fA-F]{1,15}$/)]),
      opsIncluded: z.union([z.number().int().min(0), z.string().regex(/^0x[0-9a-fA-F]{1,15}$/)]),
    })
    .passthrough(),
)

type Call = (svc: BundlerService, network: string, params: readonly unknown[]) => Promise<unknown> | unknown

const entryPointOf = (svc: BundlerService, network: string, params: readonly unknown[]) =>
  parseEntryPoint(param(params, 1), svc.supportedEntryPoints(network))

const methods: readonly [string, number, Call][] = [
  [
    'eth_sendUserOperation',
    10,
    (svc, net, p) => {
      const ep = entryPointOf(svc, net, p)
      return svc.sendUserOperation(net, parseUserOperation(param(p, 0), svc.entryPointVersion(net, ep)), ep)
    },
  ],
  [
    'eth_estimateUserOperationGas',
    10,
    (svc, net, p) => {
      const ep = entryPointOf(svc, net, p)
      const op = parseUserOperation(param(p, 0), svc.entryPointVersion(net, ep), { estimating: true })
      return svc.estimateUserOperationGas(net, op, ep, parseStateOverride(param(p, 2)))
    },
  ],
  [
    'eth_getUserOperationByHash',
    2,
    (svc, net, p) => svc.getUserOperationByHash(net, parseUserOpHash(param(p, 0))),
  ],
  [
    'eth_getUserOperationReceipt',
    2,
    (svc, net, p) => svc.getUserOperationReceipt(net, parseUserOpHash(param(p, 0))),
  ],
  ['eth_supportedEntryPoints', 1, (svc, net) => svc.supportedEntryPoints(net)],
  ['eth_chainId', 1, (svc, net) => svc.chainId(net)],
]

const debugMethods: readonly [string, Call][] = [
  ['debug_bundler_clearState', (svc, net) => svc.debug.clearState(net)],
  ['debug_bundler_clearMempool', (svc, net) => svc.debug.clearMempool(net)],
  [
    'debug_bundler_dumpMempool',
    (svc, net, p) => svc.debug.dumpMempool(net, parseAddressParam(param(p, 0), 'entryPoint')),
  ],
  // The bundle's transaction hash, or "ok" when there was nothing to bundle: a value either way,
  // as the reference bundler's clients (and the ERC-4337 conformance suite) expect.
  ['debug_bundler_sendBundleNow', async (svc, net) => (await svc.debug.sendBundleNow(net)) ?? 'ok'],
  [
    'debug_bundler_setBundlingMode',
    (svc, net, p) => {
      const mode = param(p, 0)
      if (mode !== 'auto' && mode !== 'manual') throw invalidFields('mode must be "auto" or "manual"')
      return svc.debug.setBundlingMode(net, mode)
    },
  ],
  [
    'debug_bundler_setReputation',
    (svc, net, p) => {
      const r = reputationRows.safeParse(param(p, 0))
      if (!r.success)
        throw invalidFields('reputation must be an array of {address, opsSeen, opsIncluded} (numbers or hex)')
      const n = (v: number | string) => (typeof v === 'number' ? v : Number.parseInt(v, 16))
      return svc.debug.setReputation(
        net,
        r.data.map((e) => ({
          address: toLowerAddress(e.address),
          opsSeen: n(e.opsSeen),
          opsIncluded: n(e.opsIncluded),
        })),
      )
    },
  ],
  ['debug_bundler_dumpReputation', (svc, net) => svc.debug.dumpReputation(net)],
  ['debug_bundler_clearReputation', (svc, net) => svc.debug.clearReputation(net)],
  [
    'debug_bundler_getStakeStatus',
    async (svc, net, p) => {
      const s = await svc.debug.getStakeStatus(
        net,
        parseAddressParam(param(p, 0), 'address'),
        parseAddressParam(param(p, 1), 'entryPoint'),
      )
      // Decimal strings, as the reference bundler answers (a stake overflows a JSON number).
      const { addr, stake, unstakeDelaySec } = s.stakeInfo
      return {
        ...s,
        stakeInfo: { addr, stake: stake.toString(), unstakeDelaySec: unstakeDelaySec.toString() },
      }
    },
  ],
]

const NOT_SERVED =
  'the bundler does not run on this network (it needs accountAbstraction.entryPoints and, outside dev mode, bundler.executorKeys)'

/**
 * The bundler's registry. `serves(network)` says whether the bundler runs there, `debug(network)`
 * whether its operator methods are on; other networks get -32601 with the reason.
 */
export function bundlerRegistry(
  svc: BundlerService | null,
  logger: Logger,
  opts: {
    serves(network: Network): boolean
    debug(network: Network): boolean
    /** Rows served beside the bundler's own (account-kit's rundler_/alchemy_ methods). */
    extra?: readonly MethodSpec[]
  },
): MethodRegistry {
  const row = (name: string, cost: number, call: Call, access: MethodAccess) => {
    const run = async (x: ExecContext, params: readonly unknown[]): Promise<RpcOutcome> => {
      if (!svc) return { error: { code: RPC_METHOD_NOT_FOUND, message: NOT_SERVED } }
      // A node's own error is not passed on: the bundler's BundlerError names the call that failed.
      return answerJsonRpc({ logger, what: 'bundler', rpcErrors: 'internal' }, async () =>
        wire(await call(svc, x.network.slug, params)),
      )
    }
    return m(name, cost, { scope: SCOPE, access, coalesce: false, run })
  }
  const inner = createRegistry([
    ...methods.map(([name, cost, call]) =>
      row(name, cost, call, name === 'eth_sendUserOperation' ? 'write' : 'read'),
    ),
    // Operator controls (they clear every tenant's mempool entries, set reputations, bundle now):
    // the operator only, never a tenant's bundler:send key (rpc/admission.ts).
    ...debugMethods.map(([name, call]) => row(name, 1, call, 'operator')),
    ...(opts.extra ?? []),
  ])
  const refuse = (message: string) => ({ ok: false as const, error: { code: RPC_METHOD_NOT_FOUND, message } })
  return {
    describe: inner.describe,
    specs: inner.specs,
    families: inner.families,
    lookup(network, method) {
      const found = inner.lookup(network, method)
      if (!found.ok) return found
      if (!svc || !opts.serves(network)) return refuse(NOT_SERVED)
      if (method.startsWith('debug_bundler_') && !opts.debug(network))
        return refuse(
          `the method ${method} is not enabled on ${network.chain}/${network.network} (the network's config enables it with bundler.debugMethods: true)`,
        )
      return found
    },
  }
}

export function registerBundlerRoute(
  app: FastifyInstance,
  deps: { rpc: RpcService; charger: Charger; registry: MethodRegistry },
) {
  defineJsonRpcRoute(
    app,
    {
      url: '/v1/bundler/:chain/:network',
      scope: SCOPE,
      what: 'the ERC-4337 bundler',
      summary: 'ERC-4337 bundler (JSON-RPC)',
      description:
        'The ERC-7769 bundler methods (eth_sendUserOperation, eth_estimateUserOperationGas, eth_getUserOperationByHash, eth_getUserOperationReceipt, eth_supportedEntryPoints, eth_chainId) on networks that run a bundler, with the bundler:send scope. Methods and costs: GET /v1/openrpc.json.',
      kinds: ['evm'],
      registry: deps.registry,
    },
    deps,
  )
}
