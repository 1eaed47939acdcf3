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
  data: dataApiSchema.optional(),
  accountAbstraction: accountAbstractionSchema.optional(),
  gas: gasConfigSchema.optional(),
  sponsorship: sponsorshipConfigSchema.optional(),
  bundler: bundlerConfigSchema.optional(),
})
