import { evmFamilies, evmRows } from '../rpc/methods/evm.ts'
import { createRegistry } from '../rpc/methods/registry.ts'
import { m } from '../rpc/methods/row.ts'
import type { Family, MethodRegistry, MethodSpec } from '../rpc/methods/spec.ts'

/**
 * The compat root's JSON-RPC methods: every EVM method `/v1/rpc` serves, plus the `alchemy_*`
 * rows Halyard answers from its own index. Any other `alchemy_*` name is refused with -32601
 * saying it is not served (not "does not exist": the app may well rely on it).
 */
const unservedAlchemy: Family = {
  pattern: /^alchemy_/,
  what: 'Any other alchemy_* name is refused with -32601 saying Halyard does not serve it',
  spec: (name) =>
    m(name, 0, {
      label: 'other',
      refusal: `the method ${name} is not served by Halyard's Alchemy-compatible API (see docs/alchemy.md)`,
    }),
}

/**
 * `delegates` are other endpoints' registries (the bundler's, the paymaster's) whose rows the
 * root serves as well, as Alchemy's one URL does: a name that is not an own row goes to the
 * first delegate that has it, with that registry's own refusals (a network without a bundler
 * says so). Own rows win: `eth_chainId` is the node's, not the bundler's.
 */
export function alchemyRegistry(
  rows: readonly MethodSpec[],
  delegates: readonly MethodRegistry[] = [],
): MethodRegistry {
  const own = createRegistry([...evmRows, ...rows], [...evmFamilies, unservedAlchemy])
  const ownNames = new Set([...own.specs()].map((s) => s.name))
  const delegateOf = (method: string) =>
    ownNames.has(method) ? undefined : delegates.find((d) => d.describe(method) !== undefined)
  return {
    lookup: (network, method) => (delegateOf(method) ?? own).lookup(network, method),
    describe: (method) => (delegateOf(method) ?? own).describe(method),
    *specs() {
      yield* own.specs()
      for (const d of delegates) for (const s of d.specs()) if (!ownNames.has(s.name)) yield s
    },
    *families() {
      yield* own.families()
      for (const d of delegates) yield* d.families()
    },
  }
}
