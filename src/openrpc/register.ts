import { z } from 'zod'
import type { FeatureHost } from '../http/host.ts'
import { refuseBody } from '../http/params.ts'
import { definePublicRoute } from '../http/route.ts'
import type { JsonSchema } from '../openapi/document.ts'
import { declaredSurfaces } from '../rpc/surfaces.ts'
import { buildOpenRpc } from './document.ts'

/** What GET /v1/openrpc.json declares it answers: an OpenRPC 1.3 document (its own shape is OpenRPC's). */
const documentShape = z.looseObject({
  openrpc: z.string().describe('The OpenRPC version').meta({ example: '1.3.2' }),
  info: z
    .looseObject({
      title: z.string().describe('The API').meta({ example: 'Halyard JSON-RPC' }),
      version: z.string().describe('Its version').meta({ example: 'v1' }),
    })
    .describe('What the document describes'),
  methods: z
    .array(
      z.looseObject({ name: z.string().describe('The JSON-RPC method name').meta({ example: 'eth_call' }) }),
    )
    .describe('Every method, tagged with its surface, scope and compute units'),
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
      refuseBody(request, 'GET /v1/openrpc.json')
      doc ??= buildOpenRpc({
        surfaces: declaredSurfaces(app),
        networks: ctx.networks.all(),
        origin: ctx.publicOrigin(),
      })
      return doc
    },
  })
}
