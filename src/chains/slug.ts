/** REST APIs name a network by slug: `ethereum` for mainnet, `ethereum-sepolia` otherwise. */
export function networkSlug(chain: string, network: string): string {
  return network === 'mainnet' ? chain : `${chain}-${network}`
}
