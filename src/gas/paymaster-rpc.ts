import type { FastifyInstance } from 'fastify'
import type { NetworkRegistry } from '../chains/registry.ts'
import { type Viewer, visibleTo } from '../http/access.ts'
import type { Charger } from '../http/charge.ts'
import { answerJsonRpc, internalJsonRpcError } from '../http/jsonrpc-errors.ts'
import type { RpcOutcome } from '../jsonrpc.ts'
import type { Logger } from '../logger.ts'
import { createRegistry } from '../rpc/methods/registry.ts'
import { m } from '../rpc/methods/row.ts'
import type { ExecContext, MethodRegistry } from '../rpc/methods/spec.ts'
import { defineJsonRpcRoute } from '../rpc/routes.ts'
import type { RpcService } from '../rpc/service.ts'
import { NOT_CONFIGURED } from './sponsor-routes.ts'
import type { SponsorService } from './sponsor-service.ts'

/**
 * The ERC-7677 paymaster (`POST /v1/paymaster/{chain}/{network}`) as a JSON-RPC surface: two
 * registry rows served by the shared endpoint (rpc/endpoint.ts), so envelope, batch, scope and
 * charging are /v1/rpc's. Answers depend on the caller's account: the rows never coalesce or
 * cache. Errors map to JSON-RPC in one place (http/jsonrpc-errors.ts).
 */

const PM_COST = 5

type PmMethod = (viewer: Viewer, network: string, params: unknown) => Promise<unknown>

export function paymasterRegistry(
  sponsor: SponsorService | null,
  logger: Logger,
  networks: NetworkRegistry,
): MethodRegistry {
  const row = (name: string, method: (s: SponsorService) => PmMethod) => {
    if (!sponsor) return m(name, PM_COST, { scope: 'gas:manage', coalesce: false, refusal: NOT_CONFIGURED })
    const call = method(sponsor)
    const run = async (x: ExecContext, params: readonly unknown[]): Promise<RpcOutcome> => {
      // The endpoint always passes its caller; without one there is no account to sign for.
      const caller = x.caller
      if (!caller) return { error: internalJsonRpcError() }
      // A node's failure is the paymaster's, not the caller's to read: answered as internal.
      return answerJsonRpc({ logger, what: 'paymaster', rpcErrors: 'internal' }, () =>
        call(visibleTo(caller, networks), x.network.slug, params),
      )
    }
    // A paymaster signature reserves sponsorship from the shared deposit: a write; the stub only estimates.
    const access = name === 'pm_getPaymasterData' ? 'write' : 'read'
    return m(name, PM_COST, { scope: 'gas:manage', access, coalesce: false, run })
  }
  return createRegistry([
    row('pm_getPaymasterStubData', (s) => (a, n, p) => s.getPaymasterStubData(a, n, p)),
    row('pm_getPaymasterData', (s) => (a, n, p) => s.getPaymasterData(a, n, p)),
  ])
}

export function registerPaymasterRoute(
  app: FastifyInstance,
  deps: { rpc: RpcService; charger: Charger; registry: MethodRegistry },
) {
  defineJsonRpcRoute(
    app,
    {
      url: '/v1/paymaster/:chain/:network',
      scope: 'gas:manage',
      what: 'the ERC-7677 paymaster',
      summary: 'ERC-7677 paymaster (JSON-RPC)',
      description:
        "pm_getPaymasterStubData and pm_getPaymasterData: paymaster fields for a UserOperation under one of the account's gas policies (the policy id in the context parameter), with the gas:manage scope. Methods and costs: GET /v1/openrpc.json.",
      kinds: ['evm'],
      registry: deps.registry,
    },
    deps,
  )
}
