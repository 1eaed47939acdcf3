import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfigFile } from './config-schema.ts'

// The example production config shipped in deploy/ (and in the npm package) must be one that
// `halyard serve --config` accepts.
describe('deploy/halyard.example.yaml', () => {
  it('parses with the config schema serve uses', () => {
    const config = loadConfigFile(path.resolve(import.meta.dirname, '../../deploy/halyard.example.yaml'))
    expect(config.networks.map((n) => `${n.chain}/${n.network}`)).toEqual([
      'ethereum/mainnet',
      'base/mainnet',
      'ethereum/sepolia',
      'ethereum/devnet',
      'solana/mainnet',
    ])
    expect(config.networks[0]?.gateway?.hedge).toBe(true)
    expect(config.networks[1]?.indexer?.enabled).toBe(false)
  })
})
