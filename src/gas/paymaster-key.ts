import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import type { LocalAccount } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'

/**
 * The paymaster signer's key in dev mode: generated into the data dir (mode 0600) by the devnet's
 * ERC-4337 deployment (src/devnet/account-abstraction.ts), which also makes it the
 * VerifyingPaymasters' signer and owner, and read here.
 */
export const paymasterSignerKeyFile = (dataDir: string) => path.join(dataDir, 'paymaster-signer.key')

const KEY_RE = /^0x[0-9a-fA-F]{64}$/

/**
 * The paymaster signer, or null when none is configured (sponsorship is then off). The key comes
 * from the file named by HALYARD_PAYMASTER_KEY_FILE, or the variable HALYARD_PAYMASTER_KEY
 * (0x + 64 hex digits); dev mode reads the key it generated in the data dir. The key is never
 * logged and no message quotes it.
 */
export function loadPaymasterSigner(opts: {
  devMode: boolean
  dataDir: string
  env: Readonly<Record<string, string | undefined>>
}): LocalAccount | null {
  // Dev mode's key exists once the devnet's contracts are deployed; before that, sponsorship is off.
  const devKey = opts.devMode ? paymasterSignerKeyFile(opts.dataDir) : undefined
  const file = opts.env.HALYARD_PAYMASTER_KEY_FILE ?? (devKey && existsSync(devKey) ? devKey : undefined)
  let key: string | undefined
  let source: string
  if (file) {
    if (!existsSync(file)) throw new Error(`paymaster signer key file ${file} does not exist`)
    key = readFileSync(file, 'utf8').trim()
    source = `the file ${file}`
  } else {
    key = opts.env.HALYARD_PAYMASTER_KEY
    source = 'HALYARD_PAYMASTER_KEY'
  }
  if (key === undefined || key === '') return null
  if (!KEY_RE.test(key)) throw new Error(`${source} does not hold a 0x-prefixed 32-byte hex key`)
  return privateKeyToAccount(key as `0x${string}`)
}
