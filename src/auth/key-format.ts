import { hash, randomBytes, randomInt } from 'node:crypto'

export type KeyEnv = 'live' | 'test'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const KEY_RE = /^halyard_(live|test)_[0-9A-Za-z]{32}$/

/** `halyard_{env}_` + 32 base62 characters, drawn without modulo bias. */
export function generateApiKey(env: KeyEnv): string {
  let body = ''
  for (let i = 0; i < 32; i++) body += BASE62[randomInt(62)]
  return `halyard_${env}_${body}`
}

export function isWellFormedKey(key: string): boolean {
  return KEY_RE.test(key)
}

export function keyEnvOf(key: string): KeyEnv | undefined {
  return key.startsWith('halyard_live_') ? 'live' : key.startsWith('halyard_test_') ? 'test' : undefined
}

/** One-shot `crypto.hash`: same digest as createHash, without a Hash object per request (~3× cheaper). */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex')
}

/** What lists show instead of the key: its environment prefix and four characters. */
export function displayPrefix(key: string): string {
  return `${key.slice(0, 'halyard_test_'.length + 4)}…`
}

export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`
}
