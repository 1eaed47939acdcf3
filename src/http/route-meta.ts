import type { z } from 'zod'
import type { Scope } from '../auth/scopes.ts'
import type { Network } from '../chains/registry.ts'

/**
 * What a route declares (http/route.ts defines routes with it; the gate in http/pipeline.ts and
 * the OpenAPI document read it): kept apart from route.ts so the request's typing (context.ts)
 * can name it without importing the route helpers.
 */

/** One scope, any one of several, or any valid key (e.g. the WebSocket path's plain GET). */
export type RouteScope = Scope | readonly [Scope, ...Scope[]] | 'any-key'
/** Compute units per request; 'self' when the handler charges (JSON-RPC: the body decides). */
export type RouteCost = number | 'self'
export type ChainKind = Network['kind']

/**
 * The network a path names: `:chain` as a REST slug (`ethereum-devnet`), or `:chain/:network`.
 * Unknown is a 404; a network of another kind than `kinds` is a 400.
 */
export type NetworkBinding =
  | { readonly from: 'slug'; readonly param: string; readonly kinds?: readonly ChainKind[] }
  | { readonly from: 'pair'; readonly kinds?: readonly ChainKind[] }
  /** The Alchemy-compatible root: a slug, `chain-network` or an Alchemy name (`eth-mainnet`). */
  | { readonly from: 'alias'; readonly param: string; readonly kinds?: readonly ChainKind[] }

export interface InputSchemas<P = unknown, Q = unknown, B = unknown> {
  readonly params?: z.ZodType<P>
  readonly query?: z.ZodType<Q>
  /** Declared = the body is required: an empty one is a 400 naming it. */
  readonly body?: z.ZodType<B>
}

/**
 * The success bodies a route answers, by status (OpenAPI, src/openapi; not checked at run
 * time). A route without one is documented as answering some JSON.
 */
export type RouteResponses = Readonly<Partial<Record<200 | 201 | 202, z.ZodType>>>

/** A header a route's success answers carry (OpenAPI; the route sets it itself). */
export interface ResponseHeader {
  readonly description: string
  readonly type: 'integer' | 'string' | 'boolean'
  readonly example: string | number | boolean
  readonly enum?: readonly string[]
  /** Set on every success answer of the route (else only when it has a value). */
  readonly always: boolean
}

export interface RouteMeta {
  readonly access: 'public' | { readonly scope: RouteScope; readonly cost: RouteCost }
  readonly network: NetworkBinding | undefined
  readonly schema: InputSchemas
  /** False when the network binding already proves every path parameter (JSON-RPC, WebSocket). */
  readonly parseParams: boolean
  /** Names the route in refusals: "this API key lacks the data:read scope required for …". */
  readonly what: string
  /** OpenAPI's summary of the operation (a few words); `what` when absent. */
  readonly summary: string | undefined
  /** What the operation does, for OpenAPI's description (a paragraph). */
  readonly description: string | undefined
  /** The WebSocket path: `?apiKey=` is read there too (browsers cannot set headers on a WebSocket), even on a plain GET. */
  readonly keyInQuery: boolean
  /**
   * The path parameter holding the key (the Alchemy-compatible root, where clients can set
   * nothing but the URL). It wins over headers; it is redacted wherever a URL is logged.
   */
  readonly keyInPath: string | undefined
  readonly responses: RouteResponses
  /** Headers of its own on the success answers (beside the request id and rate-limit headers every keyed answer has). */
  readonly responseHeaders: Readonly<Record<string, ResponseHeader>>
  /** A WebSocket endpoint: it answers an upgrade with 101; a plain GET is told so (400). */
  readonly websocket: boolean
}
