import type { Scope } from '../../auth/scopes.ts'
import { never, type PlanOf } from '../cache-policy.ts'
import { type CostRule, FORWARD, flat, type MethodAccess, type MethodSpec } from './spec.ts'

type RowOptions = Partial<Omit<MethodSpec, 'name' | 'cost'>>

/** The class a row has unless it says otherwise: refused with a refusal, write with rpc:write. */
function defaultAccess(o: RowOptions): MethodAccess {
  if (o.refusal !== undefined) return 'refused'
  return o.scope === 'rpc:write' ? 'write' : 'read'
}

/**
 * One row: a name, its compute units (a number, or a function of the params) and what differs
 * from the default: scope rpc:read, never cached, shared with identical in-flight calls,
 * forwarded to one upstream.
 */
export function m(name: string, cost: number | CostRule, o: RowOptions = {}): MethodSpec {
  const scope: Scope = o.scope ?? (o.access === 'write' ? 'rpc:write' : 'rpc:read')
  const cache: PlanOf = o.cache ?? never
  return {
    name,
    label: o.label ?? name,
    access: o.access ?? defaultAccess(o),
    scope,
    cost: typeof cost === 'number' ? flat(cost) : cost,
    cache,
    // A write is its own call: two users' identical devnet writes (evm_mine…) are two writes.
    coalesce: o.coalesce ?? (scope !== 'rpc:write' && o.access !== 'write'),
    upstream: o.upstream ?? FORWARD,
    ...(o.run ? { run: o.run } : {}),
    ...(o.ws ? { ws: o.ws } : {}),
    ...(o.gate ? { gate: o.gate } : {}),
    ...(o.refusal !== undefined ? { refusal: o.refusal } : {}),
    ...(o.params ? { params: o.params } : {}),
  }
}
