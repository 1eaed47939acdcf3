import { accountAbstractionSchema } from '../aa/config.ts'
import { bundlerConfigSchema } from '../bundler/config.ts'
import { configSchemas } from '../config/file.ts'
import { gasConfigSchema } from '../gas/price-config.ts'
import { sponsorshipConfigSchema } from '../gas/sponsor-config.ts'
import { dataApiSchema } from '../prices/config.ts'

/**
 * The config file as a whole: a network's own keys (src/config/file.ts) and, after them, each
 * feature's key with the schema that feature keeps beside its code. The config floor names no
 * feature, so they are composed here; a feature that declares a key (NetworkSections) and is
 * missing here does not compile. The order is the order of the keys' error messages.
 */
export const { networkSchema, configFileSchema, parseConfig, loadConfigFile } = configSchemas({
  data: dataApiSchema
    .optional()
    .describe('Token and NFT data APIs: price source, token lists, IPFS/Arweave gateways.'),
  accountAbstraction: accountAbstractionSchema
    .optional()
    .describe(
      'ERC-4337 contract addresses; production names them (their code is checked at start-up), dev mode deploys them.',
    ),
  gas: gasConfigSchema.optional().describe('Gas price estimates.'),
  sponsorship: sponsorshipConfigSchema
    .optional()
    .describe("Gas sponsorship: the v0.6 paymaster, the deposit floor and the plans' ceilings."),
  bundler: bundlerConfigSchema
    .optional()
    .describe(
      'ERC-4337 bundler. Without this key production serves no bundler on the network; dev mode runs one anyway.',
    ),
})
