import { z } from 'zod'
import { invalidRequest } from '../errors.ts'
import type { FeatureHost } from '../http/host.ts'
import { definePublicRoute } from '../http/route.ts'
import type { JsonSchema } from '../openapi/document.ts'
import { declaredSurfaces } from '../rpc/surfaces.ts'
import { buildOpenRpc } from './document.ts'

/** What GET /v1/openrpc.json declares it answers: an OpenRPC 1.3 document (its own shape is OpenRPC's). */
const documentShape = z.looseObject({
  openrpc: z.string(),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  methods: z.array(z.looseObject({ name: z.string() })),
})

/**
 * GET /v1/openrpc.json: public (no key), as /v1/openapi.json is: it says which methods exist
 * and what they cost, nothing about any account. Built on the first request, once every
 * feature has declared its JSON-RPC surfaces and the public origin is known, and kept.
 */
export function registerOpenRpc(host: FeatureHost): void {
  const { app, ctx } = host
  let doc: JsonSchema | undefined
  definePublicRoute(app, {
    method: 'GET',
    url: '/v1/openrpc.json',
    what: 'the OpenRPC document of the JSON-RPC surfaces',
    summary: 'OpenRPC document',
    description:
      'An OpenRPC 1.3 document of every JSON-RPC surface (/v1/rpc for EVM and Solana, /v1/bundler, /v1/paymaster, the Alchemy-compatible root), generated from the method registries: per method and surface, the scope a key needs and the compute units it costs. No key.',
    responses: { 200: documentShape },
    handler: ({ request }) => {
      // A body on this GET is a client mistake: answered in a few bytes, not with the large
      // document while the client is still sending (its connection would be reset mid-answer).
      const length = request.headers['content-length']
      if ((length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined)
        throw invalidRequest('GET /v1/openrpc.json takes no request body')
      doc ??= buildOpenRpc({
        surfaces: declaredSurfaces(app),
        networks: ctx.networks.all(),
        origin: ctx.publicOrigin(),
      })
      return doc
    },
  })
}
