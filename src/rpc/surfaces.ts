import type { FastifyInstance } from 'fastify'
import type { Scope } from '../auth/scopes.ts'
import type { ChainKind } from '../http/route-meta.ts'
import type { MethodRegistry } from './methods/spec.ts'

/**
 * The JSON-RPC surfaces an app serves (every route made by defineJsonRpcRoute), each with the
 * registry its calls are looked up in: what the OpenRPC document (src/openrpc) is generated
 * from, so a surface or a method added in one place is documented without a second list.
 */
export interface JsonRpcSurface {
  /** Fastify's form: `/v1/rpc/:chain/:network`. */
  readonly url: string
  readonly what: string
  readonly scope: Scope | readonly [Scope, ...Scope[]]
  /** The chain kinds it serves; undefined is every kind. */
  readonly kinds: readonly ChainKind[] | undefined
  /** Its own registry; without one, each chain kind's (rpc/methods/registry.ts). */
  readonly registry: MethodRegistry | undefined
  /** The path also carries the key (the Alchemy-compatible root). */
  readonly keyInPath: boolean
}

const byApp = new WeakMap<FastifyInstance, JsonRpcSurface[]>()

export function recordSurface(app: FastifyInstance, surface: JsonRpcSurface): void {
  const list = byApp.get(app) ?? []
  list.push(surface)
  byApp.set(app, list)
}

export function declaredSurfaces(app: FastifyInstance): readonly JsonRpcSurface[] {
  return byApp.get(app) ?? []
}
