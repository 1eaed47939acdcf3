import { z } from 'zod'

/**
 * The Alchemy-compatible root (docs/alchemy.md). An app written against Alchemy moves by changing its
 * URL to `{base_url}/alchemy/{network}/v2/{key}` (base_url includes /v1): clients such as alchemy-sdk add nothing to that
 * URL but `/{method}` for REST, so the key can live only in the path. `{network}` is any name
 * NetworkRegistry.getByAlias accepts (`ethereum-devnet`, `ethereum-mainnet`, `eth-mainnet`).
 */
export const ALCHEMY_V2 = '/v1/alchemy/:network/v2/:apiKey'
/** Alchemy's NFT API v3 root, for clients that call its paths directly. */
export const ALCHEMY_NFT_V3 = '/v1/alchemy/:network/nft/v3/:apiKey'

/** The binding every compat route uses: network alias in `network`, key in `apiKey`. */
export const ALCHEMY_ALIAS = { param: 'network', keyParam: 'apiKey' } as const

/** The path parameters of the compat roots (the gate resolves and checks both first). */
export const alchemyRootParams = z.object({
  network: z.string().min(1).max(64).meta({
    description: "The network, by Alchemy's name (`eth-mainnet`) or a Halyard slug (`ethereum-devnet`)",
    example: 'eth-mainnet',
  }),
  apiKey: z
    .string()
    .min(1)
    .max(200)
    .meta({ description: 'the API key (redacted from logs)', example: 'hk_live_your_key' }),
})
