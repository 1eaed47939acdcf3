import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { z } from 'zod'

/** Files Halyard keeps in its data dir. Secrets are written 0600. */
export const dataFiles = (dir: string) => ({
  admin: path.join(dir, 'admin.json'),
  secretKey: path.join(dir, 'secret.key'),
  devKey: path.join(dir, 'dev-key.json'),
  anvilState: path.join(dir, 'anvil-state.json'),
})

/** The data dir, private to its owner: made 0700, and an existing one tightened to 0700. */
export function ensureDir(dir: string) {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  chmodSync(dir, 0o700)
}

export function writeSecretFile(file: string, content: string) {
  writeFileSync(file, content, { mode: 0o600 })
}

/** HALYARD_SECRET_KEY, or in dev mode a key generated once into the data dir. */
export function loadOrCreateSecretKey(dir: string, fromEnv: string | undefined): Buffer {
  if (fromEnv) return Buffer.from(fromEnv.replace(/^0x/, ''), 'hex')
  const file = dataFiles(dir).secretKey
  if (existsSync(file)) {
    const hex = readFileSync(file, 'utf8').trim()
    if (/^[0-9a-f]{64}$/.test(hex)) return Buffer.from(hex, 'hex')
    throw new Error(`${file} does not hold a 64-hex-digit key`)
  }
  const key = randomBytes(32)
  writeSecretFile(file, key.toString('hex'))
  return key
}

const adminFileSchema = z.object({ origin: z.string(), token: z.string(), pid: z.number().int() })
export type AdminFile = z.infer<typeof adminFileSchema>

/** The running server's admin endpoint, if a live process holds this data dir. */
export function readAdminFile(dir: string): AdminFile | undefined {
  const file = dataFiles(dir).admin
  if (!existsSync(file)) return undefined
  try {
    const parsed = adminFileSchema.parse(JSON.parse(readFileSync(file, 'utf8')))
    process.kill(parsed.pid, 0)
    return parsed
  } catch {
    return undefined
  }
}

export function writeAdminFile(dir: string, content: AdminFile) {
  writeSecretFile(dataFiles(dir).admin, JSON.stringify(content))
}

export function removeAdminFile(dir: string, pid: number) {
  const current = readAdminFile(dir)
  if (!current || current.pid === pid) rmSync(dataFiles(dir).admin, { force: true })
}
