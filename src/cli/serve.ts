import type { Env } from '../config/env.ts'
import { loadConfigFile } from '../config/file.ts'
import { ConfigError } from '../config/validation.ts'
import { runServer } from './run-server.ts'

/** `halyard serve [--config FILE]`: production mode. */
export async function serve(env: Env, configFile: string | undefined): Promise<void> {
  const file = configFile ?? env.HALYARD_CONFIG
  if (!file) throw new ConfigError('no config file: pass --config FILE or set HALYARD_CONFIG')
  const config = loadConfigFile(file)
  if (!env.HALYARD_SECRET_KEY) {
    throw new ConfigError('HALYARD_SECRET_KEY is required in production (32 bytes as 64 hex digits)')
  }
  const { halyard, stopped } = await runServer({ env, networks: config.networks, devMode: false })
  console.log(`Halyard serving ${config.networks.length} network(s) at ${halyard.baseUrl}`)
  await stopped
}
