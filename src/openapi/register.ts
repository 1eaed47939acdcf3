import { z } from 'zod'
import type { FeatureHost } from '../http/host.ts'
import { declaredRoutes } from '../http/pipeline.ts'
import { definePublicRoute } from '../http/route.ts'
import { buildOpenApi, type JsonSchema } from './document.ts'

/** What GET /v1/openapi.json declares it answers: an OpenAPI 3.1 document (its own shape is OpenAPI's). */
const documentShape = z.looseObject({
  openapi: z.literal('3.1.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.record(z.string(), z.unknown())),
  components: z.record(z.string(), z.unknown()),
})

/**
 * GET /v1/openapi.json: public (no key), built on the first request, once every feature has
 * declared its routes, and kept: routes do not change while the server runs.
 */
export function registerOpenApi(host: FeatureHost): void {
  const app = host.app
  let doc: JsonSchema | undefined
  definePublicRoute(app, {
    method: 'GET',
    url: '/v1/openapi.json',
    what: 'the OpenAPI document',
    summary: 'OpenAPI document',
    description:
      'This document: OpenAPI 3.1, generated from the schemas the routes validate with. The JSON-RPC methods are in GET /v1/openrpc.json. No key.',
    responses: { 200: documentShape },
    handler: () => {
      doc ??= buildOpenApi(declaredRoutes(app))
      return doc
    },
  })
}
