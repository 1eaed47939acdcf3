import { decodeFunctionResult, encodeFunctionData } from 'viem'
import { call, getCode, hasCode, nodeError } from '../chains/reads.ts'
import type { Network } from '../chains/registry.ts'
import type { Logger } from '../logger.ts'
import type { Address, Hex } from '../types.ts'
import { simpleAccountAddress } from './account-address.ts'
import type { AccountAbstractionConfig } from './config.ts'
import { simpleAccountFactoryAbi } from './contracts.ts'

/** Every address a network's config names, with the config path that names it. */
export function namedContracts(cfg: AccountAbstractionConfig): { path: string; address: Address }[] {
  const out: { path: string; address: Address }[] = []
  for (const v of ['v06', 'v07'] as const) {
    const ep = cfg.entryPoints[v]
    if (ep) out.push({ path: `accountAbstraction.entryPoints.${v}`, address: ep })
    const f = cfg.simpleAccountFactory[v]
    if (f) out.push({ path: `accountAbstraction.simpleAccountFactory.${v}`, address: f })
  }
  if (cfg.paymaster) out.push({ path: 'accountAbstraction.paymaster', address: cfg.paymaster })
  return out
}

/**
 * Start-up check: every configured ERC-4337 address must hold code, or Halyard refuses to start
 * with a message naming the network and the config field. An upstream that cannot answer is only
 * a warning: availability is what /ready reports, and start-up must not hang on it.
 */
export async function checkAccountAbstractionCode(
  networks: readonly Network[],
  logger: Logger,
): Promise<void> {
  const missing: string[] = []
  for (const net of networks) {
    const cfg = net.config.accountAbstraction
    if (!cfg || net.kind !== 'evm') continue
    for (const c of namedContracts(cfg)) {
      let code: Hex
      try {
        code = await getCode(net, c.address)
      } catch (err) {
        logger.warn(
          { network: net.slug, field: c.path, err: nodeError(err)?.message ?? (err as Error).message },
          'cannot check ERC-4337 contract code at start-up',
        )
        continue
      }
      if (!hasCode(code)) {
        missing.push(`networks[${net.chain}/${net.network}].${c.path}: no contract code at ${c.address}`)
      } else if (c.path === 'accountAbstraction.simpleAccountFactory.v07') {
        const problem = await checkFactoryDerivation(net, c.address, logger)
        if (problem) missing.push(`networks[${net.chain}/${net.network}].${c.path}: ${problem}`)
      }
    }
  }
  if (missing.length > 0) {
    throw new Error(`ERC-4337 contracts missing on chain (check the config file): ${missing.join('; ')}`)
  }
}

/**
 * Wallet addresses are computed locally for SimpleAccountFactory v0.7.0: a factory built from
 * other code would hand out addresses its wallets never get. One probe `getAddress` call tells.
 */
async function checkFactoryDerivation(
  net: Network,
  factory: Address,
  logger: Logger,
): Promise<string | null> {
  const probe: Address = '0x000000000000000000000000000000000000dead'
  try {
    const data = encodeFunctionData({
      abi: simpleAccountFactoryAbi,
      functionName: 'getAddress',
      args: [probe, 7n],
    })
    let res: Hex
    try {
      res = await call(net, { to: factory, data })
    } catch (err) {
      const refused = nodeError(err)
      if (refused) return `getAddress(owner, salt) reverted (${refused.message}): not a SimpleAccountFactory`
      throw err
    }
    const onChain = decodeFunctionResult({
      abi: simpleAccountFactoryAbi,
      functionName: 'getAddress',
      data: res,
    })
    if (onChain.toLowerCase() !== simpleAccountAddress(factory, probe, 7n))
      return `${factory} is not a SimpleAccountFactory v0.7.0 (its getAddress disagrees with the local derivation)`
    return null
  } catch (err) {
    logger.warn(
      { network: net.slug, err: (err as Error).message },
      'cannot check the wallet factory at start-up',
    )
    return null
  }
}
