import { z } from 'zod'
import type { FeatureHost } from '../http/host.ts'
import { refuseBody } from '../http/params.ts'
import { declaredRoutes } from '../http/pipeline.ts'
import { definePublicRoute } from '../http/route.ts'
import { buildOpenApi, type JsonSchema } from './document.ts'

/** What GET /v1/openapi.json declares it answers: an OpenAPI 3.1 document (its own shape is OpenAPI's). */
const documentShape = z.looseObject({
  openapi: z.literal('3.1.0').describe('The OpenAPI version'),
  info: z
    .looseObject({
      title: z.string().describe('The API').meta({ example: 'Halyard API' }),
      version: z.string().describe('Its version').meta({ example: 'v1' }),
    })
    .describe('What the document describes'),
  paths: z
    .record(z.string(), z.record(z.string(), z.unknown()))
    .describe('Every operation, by path and method'),
  components: z.record(z.string(), z.unknown()).describe('Shared schemas, responses and security schemes'),
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
    handler: ({ request }) => {
      refuseBody(request, 'GET /v1/openapi.json')
      doc ??= buildOpenApi(declaredRoutes(app))
      return doc
    },
  })
}
