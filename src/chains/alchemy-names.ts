/**
 * Alchemy's network names (`eth-mainnet`, `base-sepolia`, …) for the networks Halyard knows by
 * chain and network, so an app written against Alchemy moves by changing one URL (docs/alchemy.md).
 * A network's config may add names (`alchemyNames`), e.g. for a chain Alchemy names differently.
 */
const ALCHEMY_CHAIN_PREFIX: Readonly<Record<string, string>> = {
  ethereum: 'eth',
  arbitrum: 'arb',
  'arbitrum-nova': 'arbnova',
  optimism: 'opt',
  polygon: 'polygon',
  'polygon-zkevm': 'polygonzkevm',
  base: 'base',
  zksync: 'zksync',
  linea: 'linea',
  scroll: 'scroll',
  blast: 'blast',
  avalanche: 'avax',
  bnb: 'bnb',
  gnosis: 'gnosis',
  celo: 'celo',
  solana: 'solana',
}

/** The names Alchemy gives `chain`/`network` (`ethereum`/`mainnet` → `eth-mainnet`), if any. */
export function defaultAlchemyNames(chain: string, network: string): string[] {
  const prefix = ALCHEMY_CHAIN_PREFIX[chain]
  return prefix === undefined ? [] : [`${prefix}-${network}`]
}
