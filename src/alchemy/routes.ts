import type { FastifyInstance } from 'fastify'
import type { Charger } from '../http/charge.ts'
import type { MethodRegistry } from '../rpc/methods/spec.ts'
import { defineJsonRpcRoute } from '../rpc/routes.ts'
import type { RpcService } from '../rpc/service.ts'
import { ALCHEMY_ALIAS, ALCHEMY_V2, alchemyRootParams } from './paths.ts'

/**
 * `POST /alchemy/{network}/v2/{key}`: JSON-RPC as Alchemy serves it, through the shared endpoint
 * (envelope, batch, per-call scope and compute units are /v1/rpc's). The key in the path is the
 * same key, with the same scopes, plan and limits.
 */
export function registerAlchemyRpcRoute(
  app: FastifyInstance,
  deps: { rpc: RpcService; charger: Charger; registry: MethodRegistry },
) {
  defineJsonRpcRoute(
    app,
    {
      url: ALCHEMY_V2,
      // Any scope one of its methods needs reaches the endpoint; each call is then checked.
      scope: ['rpc:read', 'rpc:write', 'data:read', 'bundler:send', 'gas:manage'],
      what: 'the Alchemy-compatible JSON-RPC API',
      summary: 'Alchemy-compatible JSON-RPC',
      description:
        "Alchemy's URL shape with the key in the path: the EVM methods of /v1/rpc, the alchemy_* methods Halyard answers from its index (token balances and metadata, asset transfers, receipts, simulation), and the bundler's and paymaster's methods, each with its own scope and cost. Methods: GET /v1/openrpc.json.",
      kinds: ['evm'],
      registry: deps.registry,
      alias: ALCHEMY_ALIAS,
      params: alchemyRootParams,
    },
    deps,
  )
}
