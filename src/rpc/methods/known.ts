import { registries } from './registry.ts'

/** The paymaster's methods (ERC-7677) and the Alchemy-compatible root's own namespace. */
const OTHER_SURFACES = /^(?:pm_getPaymasterStubData|pm_getPaymasterData|alchemy_[A-Za-z0-9]+)$/

/**
 * Whether a JSON-RPC method name is one this server knows on some surface (the EVM and Solana
 * registries, whose families cover the bundler's `eth_*`/`debug_bundler_*` names, the
 * paymaster's and the Alchemy root's): what a key's allowed-methods list may hold, so a typo
 * is a 400 when the list is set rather than a method silently never allowed.
 */
export function isKnownMethod(name: string): boolean {
  return (
    registries.evm.describe(name) !== undefined ||
    registries.solana.describe(name) !== undefined ||
    OTHER_SURFACES.test(name)
  )
}
