import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { describe, expect, it } from 'vitest'
import { loadPaymasterSigner, paymasterSignerKeyFile } from './paymaster-key.ts'
import { nativeToWei, sponsorshipConfigSchema } from './sponsor-config.ts'

describe('sponsorship config', () => {
  const key = generatePrivateKey()
  const address = privateKeyToAccount(key).address

  it('dev mode reads the signer key from the data dir; production from the file or the variable', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'halyard-sponsor-cfg-'))
    writeFileSync(paymasterSignerKeyFile(dir), key)
    expect(loadPaymasterSigner({ devMode: true, dataDir: dir, env: {} })?.address).toBe(address)
    expect(loadPaymasterSigner({ devMode: false, dataDir: dir, env: {} })).toBeNull()
    expect(
      loadPaymasterSigner({ devMode: false, dataDir: dir, env: { HALYARD_PAYMASTER_KEY: key } })?.address,
    ).toBe(address)
    const file = path.join(dir, 'prod.key')
    writeFileSync(file, `${key}\n`)
    expect(
      loadPaymasterSigner({ devMode: false, dataDir: dir, env: { HALYARD_PAYMASTER_KEY_FILE: file } })
        ?.address,
    ).toBe(address)
  })

  it('a malformed key is refused without quoting it', () => {
    const bad = `${key.slice(0, -1)}z`
    let message = ''
    try {
      loadPaymasterSigner({ devMode: false, dataDir: '/nonexistent', env: { HALYARD_PAYMASTER_KEY: bad } })
    } catch (err) {
      message = (err as Error).message
    }
    expect(message).toBe('HALYARD_PAYMASTER_KEY does not hold a 0x-prefixed 32-byte hex key')
    expect(message).not.toContain(bad.slice(2, 20))
  })

  it('deposit floor in native units, exact', () => {
    expect(nativeToWei(sponsorshipConfigSchema.parse({}).depositFloor)).toBe(100_000_000_000_000_000n)
    expect(nativeToWei('1.000000000000000001')).toBe(1_000_000_000_000_000_001n)
    expect(sponsorshipConfigSchema.safeParse({ depositFloor: '-1' }).success).toBe(false)
    expect(sponsorshipConfigSchema.safeParse({ bogus: 1 }).success).toBe(false)
  })
})
