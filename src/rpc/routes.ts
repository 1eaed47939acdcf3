import type { FastifyInstance } from 'fastify'
import type { NetworkRegistry } from '../chains/registry.ts'
import { forbidden, invalidRequest } from '../errors.ts'
import { requireNetworkAccess } from '../server/auth-hook.ts'
import type { Charger } from '../server/charge.ts'
import { DEFAULT_MAX_BATCH, parseEnvelope } from './envelope.ts'
import { type JsonRpcResponse, RPC_INVALID_REQUEST, toResponse } from './jsonrpc.ts'
import type { AdmittedCall, RpcService } from './service.ts'

interface Deps {
  networks: NetworkRegistry
  rpc: RpcService
  charger: Charger
  maxBatch?: number
}

/** POST /v1/rpc/{chain}/{network}: spec 4.1. */
export function registerRpcRoutes(app: FastifyInstance, deps: Deps) {
  const maxBatch = deps.maxBatch ?? DEFAULT_MAX_BATCH

  app.post<{ Params: { chain: string; network: string } }>(
    '/v1/rpc/:chain/:network',
    { config: { chargesItself: true } },
    async (request, reply) => {
      const caller = request.caller!
      const network = deps.networks.get(request.params.chain, request.params.network)
      request.metricNetwork = network.slug
      requireNetworkAccess(caller, network)
      if (!caller.scopes.has('rpc:read') && !caller.scopes.has('rpc:write')) {
        throw forbidden('this API key lacks the rpc:read scope required for JSON-RPC')
      }

      const body: unknown = request.body
      const isBatch = Array.isArray(body)
      if (!isBatch && (typeof body !== 'object' || body === null)) {
        throw invalidRequest('body must be a JSON-RPC request object or a batch array')
      }
      const items: unknown[] = isBatch ? body : [body]
      if (items.length === 0) throw invalidRequest('batch is empty')
      if (items.length > maxBatch)
        throw invalidRequest(`batch has ${items.length} calls; the limit is ${maxBatch}`)

      // Admission: envelope, method policy, scope and cost of every call, before any upstream work.
      const admitted: (AdmittedCall | JsonRpcResponse)[] = []
      let computeUnits = 0
      for (const item of items) {
        const env = parseEnvelope(item)
        if (!env.ok) {
          if (!isBatch) throw invalidRequest(env.message)
          admitted.push({
            jsonrpc: '2.0',
            id: env.id,
            error: { code: RPC_INVALID_REQUEST, message: env.message },
          })
          continue
        }
        const call = deps.rpc.admit(network, caller, env.request)
        if (!isBatch && call.refused && call.refused.code !== -32601) throw forbidden(call.refused.message)
        computeUnits += call.computeUnits
        admitted.push(call)
      }
      request.metricMethod = isBatch ? 'batch' : (items[0] as { method: string }).method

      await deps.charger.charge(request, reply, computeUnits)

      const responses = await Promise.all(
        admitted.map(async (a): Promise<JsonRpcResponse> => {
          if ('jsonrpc' in a) return a
          if (a.refused) return { jsonrpc: '2.0', id: a.request.id, error: a.refused }
          return toResponse(a.request.id, await deps.rpc.execute(network, a.request))
        }),
      )
      return isBatch ? responses : responses[0]
    },
  )
}
