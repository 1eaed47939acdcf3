import { type AllowlistName, ipAllowed, originAllowed } from '../auth/allowlists.ts'
import type { Scope } from '../auth/scopes.ts'
import type { Caller } from '../auth/service.ts'
import type { Network } from '../chains/registry.ts'
import { HalyardError } from '../errors.ts'
import { type JsonRpcErrorObject, RPC_FORBIDDEN } from '../jsonrpc.ts'
import { callTargets } from './call-targets.ts'
import type { RouteScope } from './route-meta.ts'

/**
 * THE access decision: every transport (Fastify routes, the JSON-RPC fast lane, WebSocket
 * upgrades and messages, batch items, the Alchemy-compatible root, the bundler and paymaster)
 * asks these functions and maps the answer onto its wire; no transport restates a rule.
 * Pure: facts in, `undefined` (allowed) or a Refusal out — no I/O, no clock, no throw.
 *
 * Two stages of one decision, in this order:
 * - `decideRequest` when a request (or a WebSocket upgrade) arrives with a key: the key's
 *   allowed IPs, then allowed origins (RFC 6454 Origin header), the environment rule (a test
 *   key never reaches a mainnet network), then the route's scope.
 * - `decideCall` for each JSON-RPC call in it (single, batch item, WebSocket message): the
 *   method's scope, operator controls, the key's allowed methods, then its allowed contracts.
 * The origin and IP lists refuse a whole request (HTTP 403; an upgrade is refused before the
 * handshake); the method and contract lists refuse a call (a single call's HTTP 403, a batch
 * item's or a WebSocket message's JSON-RPC error -32003), so the rest of a batch still runs.
 */

export interface Refusal {
  readonly code: 'forbidden'
  readonly status: 403
  readonly message: string
  /** The allowlist that refused, when one did. */
  readonly list?: AllowlistName
}

export interface RequestFacts {
  readonly caller: Caller
  /** The network the request names (absent for account-wide routes: webhooks, policies…). */
  readonly network?: Network | undefined
  /** What the route requires (one scope, any of several, or any valid key). */
  readonly scope: RouteScope
  /** Names the route in a scope refusal. */
  readonly what: string
  /** The request's Origin header, as sent. */
  readonly origin: string | undefined
  /** The client's address (http/peer.ts); transports compute it only for a key with an allowed-IPs list. */
  readonly ip: string | undefined
}

export interface CallFacts {
  readonly caller: Caller
  readonly method: string
  /** The method's scope (from its registry row). */
  readonly scope: Scope
  /** An operator control (its row's class is `operator`): only the operator may call it. */
  readonly operatorOnly?: boolean
  readonly params: readonly unknown[]
}

const refuse = (message: string, list?: AllowlistName): Refusal =>
  list === undefined
    ? { code: 'forbidden', status: 403, message }
    : { code: 'forbidden', status: 403, message, list }

/** The one scope refusal: names the scope (the first of alternatives) and what needed it. */
export function scopeRefusal(scope: Scope, what: string): string {
  return `this API key lacks the ${scope} scope required for ${what}`
}

/** Operator controls are refused to tenants, naming both ways the operator is recognised. */
export function operatorRefusal(method: string): string {
  return `the method ${method} is an operator control: it needs a key of an operator account (HALYARD_OPERATOR_EMAILS; in dev mode the dev account) or the admin token in the X-Halyard-Admin-Token header from loopback`
}

function hasScope(caller: Caller, scope: RouteScope): boolean {
  if (scope === 'any-key') return true
  if (typeof scope === 'string') return caller.scopes.has(scope)
  return scope.some((s) => caller.scopes.has(s))
}

/** A test key may not touch any mainnet network (docs/concepts.md). */
export function decideNetwork(caller: Caller, network: Network): Refusal | undefined {
  if (caller.env === 'test' && network.isMainnet)
    return refuse(
      `test keys cannot access mainnet networks (${network.chain}/${network.network}); use a live key`,
    )
  return undefined
}

export function decideRequest(f: RequestFacts): Refusal | undefined {
  const { caller } = f
  const allow = caller.allow
  if (allow !== undefined) {
    if (allow.ips !== undefined && !ipAllowed(allow.ips, f.ip))
      return refuse(
        `the client address ${f.ip ?? '(unknown)'} is not on this API key's allowed IPs list (allowed_ips)`,
        'ips',
      )
    if (allow.origins !== undefined && !originAllowed(allow.origins, f.origin))
      return refuse(
        f.origin === undefined
          ? 'this API key is restricted to its allowed origins list (allowed_origins) and the request has no Origin header'
          : `the origin ${f.origin.slice(0, 200)} is not on this API key's allowed origins list (allowed_origins)`,
        'origins',
      )
  }
  if (f.network !== undefined) {
    const env = decideNetwork(caller, f.network)
    if (env) return env
  }
  const scope = f.scope
  if (scope !== 'any-key' && !hasScope(caller, scope))
    return refuse(scopeRefusal(typeof scope === 'string' ? scope : scope[0], f.what))
  return undefined
}

export function decideCall(f: CallFacts): Refusal | undefined {
  const { caller, method } = f
  if (!caller.scopes.has(f.scope)) return refuse(scopeRefusal(f.scope, method))
  if (f.operatorOnly && !caller.operator) return refuse(operatorRefusal(method))
  const allow = caller.allow
  if (allow === undefined) return undefined
  if (allow.methods !== undefined && !allow.methods.has(method))
    return refuse(
      `the method ${method} is not on this API key's allowed methods list (allowed_methods)`,
      'methods',
    )
  if (allow.contracts !== undefined) {
    const targets = callTargets(method, f.params)
    if (targets !== undefined) {
      if (targets.length === 0)
        return refuse(
          `this API key is restricted to its allowed contracts list (allowed_contracts): ${method} must name a contract address on it (an eth_getLogs needs an address filter)`,
          'contracts',
        )
      for (const t of targets)
        if (!allow.contracts.has(t))
          return refuse(
            `the contract ${t} is not on this API key's allowed contracts list (allowed_contracts)`,
            'contracts',
          )
    }
  }
  return undefined
}

/** A refusal on an HTTP answer (and a refused WebSocket upgrade). */
export function refusalError(r: Refusal): HalyardError {
  return new HalyardError(r.code, r.message)
}

/** A refusal as a JSON-RPC error: a batch item, a WebSocket message. */
export function refusalRpcError(r: Refusal): JsonRpcErrorObject {
  return { code: RPC_FORBIDDEN, message: r.message }
}
