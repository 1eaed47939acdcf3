import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'

/**
 * Signing secrets: `whsec_` + 32 random bytes (base64url). The whole string, as UTF-8, is the
 * HMAC key — receivers paste it as-is. At rest it is encrypted with AES-256-GCM under the
 * process secret key (HALYARD_SECRET_KEY); a stolen database alone does not reveal secrets.
 */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`
}

const VERSION = 'v1'

export function encryptSecret(secret: string, key: Buffer): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  const enc = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()])
  return [
    VERSION,
    iv.toString('base64'),
    cipher.getAuthTag().toString('base64'),
    enc.toString('base64'),
  ].join(':')
}

export function decryptSecret(stored: string, key: Buffer): string {
  const [version, iv, tag, enc] = stored.split(':')
  if (version !== VERSION || !iv || !tag || enc === undefined)
    throw new Error('unrecognised encrypted secret')
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'))
  decipher.setAuthTag(Buffer.from(tag, 'base64'))
  return Buffer.concat([decipher.update(Buffer.from(enc, 'base64')), decipher.final()]).toString('utf8')
}

/** Form A signature: lowercase hex HMAC-SHA256, keyed with the signing secret, over `{timestamp}.{raw body}`. */
export function sign(secret: string, timestamp: number, rawBody: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest('hex')
}
