import type { Network } from '../chains/registry.ts'
import { hasMethodCost } from '../limits/compute-units.ts'

/**
 * Which methods a network serves. Unknown and dangerous methods are refused with -32601
 * before any upstream sees them: node administration and key handling never, debug/trace
 * only when the operator enables them, devnet helpers only on devnets.
 */
const EVM_ALWAYS = /^(eth|net|web3)_[A-Za-z0-9]+$/
const EVM_DEBUG = /^(debug|trace)_[A-Za-z0-9]+$/
const EVM_DEVNET = /^(anvil|hardhat|evm|ganache)_[A-Za-z0-9]+$/
const EVM_DENIED = new Set([
  'eth_sign',
  'eth_signTransaction',
  'eth_sendTransaction',
  'eth_signTypedData_v4',
  'eth_coinbase',
])

export type PolicyVerdict = { allowed: true } | { allowed: false; reason: string }

export function checkMethod(network: Network, method: string): PolicyVerdict {
  if (network.kind === 'solana') {
    // Solana's method table is the CU table: what is not priced is not served.
    if (!hasMethodCost('solana', method)) {
      return { allowed: false, reason: `the method ${method} does not exist or is not available` }
    }
    return { allowed: true }
  }
  if (EVM_DENIED.has(method)) {
    return {
      allowed: false,
      reason: `the method ${method} is not available: Halyard holds no keys; sign locally`,
    }
  }
  if (EVM_ALWAYS.test(method)) return { allowed: true }
  if (EVM_DEBUG.test(method)) {
    return network.config.debugMethods
      ? { allowed: true }
      : {
          allowed: false,
          reason: `the method ${method} is not enabled on ${network.chain}/${network.network}`,
        }
  }
  if (EVM_DEVNET.test(method)) {
    return network.isDevnet
      ? { allowed: true }
      : { allowed: false, reason: `the method ${method} is only available on devnets` }
  }
  return { allowed: false, reason: `the method ${method} does not exist or is not available` }
}
