import type { Network } from '../../chains/registry.ts'
import type { DescribeMethod } from '../../chains/upstream-pool.ts'
import { RPC_METHOD_NOT_FOUND } from '../../jsonrpc.ts'
import { evmFamilies, evmRows } from './evm.ts'
import { solanaRows } from './solana.ts'
import { type Family, FORWARD, type Lookup, type MethodRegistry, type MethodSpec } from './spec.ts'

/** Family specs kept per registry: enough for every real method; others are rebuilt per call. */
const MAX_FAMILY_SPECS = 512

function gateRefusal(spec: MethodSpec, network: Network): string | undefined {
  const where = `${network.chain}/${network.network}`
  switch (spec.gate) {
    case undefined:
      return undefined
    case 'debug':
      return network.config.debugMethods ? undefined : `the method ${spec.name} is not enabled on ${where}`
    case 'devnet':
    case 'devnet-destructive':
      if (!network.isDevnet) return `the method ${spec.name} is only available on devnets`
      if (spec.gate === 'devnet' || network.config.devMethods?.destructive === true) return undefined
      return `the method ${spec.name} is not enabled on ${where}: it wipes or replaces the devnet for every user (the network's config enables it with devMethods.destructive: true)`
  }
}

export function createRegistry(
  rows: readonly MethodSpec[],
  families: readonly Family[] = [],
): MethodRegistry {
  const byName = new Map(rows.map((r) => [r.name, r]))
  const members = new Map<string, MethodSpec>()

  const describe = (method: string): MethodSpec | undefined => {
    const spec = byName.get(method) ?? members.get(method)
    if (spec) return spec
    const family = families.find((f) => f.pattern.test(method))
    if (!family) return undefined
    const made = family.spec(method)
    if (members.size < MAX_FAMILY_SPECS) members.set(method, made)
    return made
  }

  const refuse = (message: string): Lookup => ({ ok: false, error: { code: RPC_METHOD_NOT_FOUND, message } })

  return {
    describe,
    lookup(network, method) {
      const spec = describe(method)
      if (!spec) return refuse(`the method ${method} does not exist or is not available`)
      if (spec.refusal !== undefined) return refuse(spec.refusal)
      const why = gateRefusal(spec, network)
      return why === undefined ? { ok: true, spec } : refuse(why)
    },
    specs: () => byName.values(),
    families: () => families,
  }
}

/** One registry per chain kind; the bundler and paymaster endpoints will add theirs. */
export const registries: Readonly<Record<Network['kind'], MethodRegistry>> = {
  evm: createRegistry(evmRows, evmFamilies),
  solana: createRegistry(solanaRows),
}

/** For the upstream pool (wired in server/runtime.ts): chains/ does not import rpc/. */
export const describeMethod: DescribeMethod = (kind, method) => {
  const spec = registries[kind].describe(method)
  return spec ? { upstream: spec.upstream, label: spec.label } : { upstream: FORWARD, label: 'other' }
}
