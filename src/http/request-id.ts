import { randomFillSync } from 'node:crypto'

/**
 * Every answer carries `X-Request-Id` (docs/concepts.md): the client's own when it sent a safe
 * one, else a new random UUID. One place decides, for Fastify's routes, the fast lane, the CORS
 * preflight and the answers written on the socket.
 */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/

/** The client's `X-Request-Id` when it is safe to echo, else undefined. */
export function safeRequestId(given: unknown): string | undefined {
  return typeof given === 'string' && SAFE_REQUEST_ID.test(given) ? given : undefined
}

/** The id an answer carries: the client's when safe, else a new one. */
export function requestIdFrom(given: unknown): string {
  return safeRequestId(given) ?? newRequestId()
}

/** Random bytes for 256 ids at a time, as `crypto.randomUUID` keeps them (CSPRNG, refilled when used up). */
const POOL = Buffer.alloc(16 * 256)
let used = POOL.length
/** The id's 36 characters are written here, then read out as one string. */
const TEXT = Buffer.alloc(36)
/** A byte's two lowercase hex digits, as the bytes to write. */
const HIGH = new Uint8Array(256)
const LOW = new Uint8Array(256)
for (let b = 0; b < 256; b++) {
  const hex = b.toString(16).padStart(2, '0')
  HIGH[b] = hex.charCodeAt(0)
  LOW[b] = hex.charCodeAt(1)
}
const DASH = 0x2d

/**
 * A new random (version 4) UUID in its canonical lowercase form (RFC 9562), as
 * `crypto.randomUUID()` gives. Written into one buffer and read out as one flat string:
 * `randomUUID` joins twenty pieces into a string that Node then flattens again to check it as a
 * header value, on every answer (the cached row's profile, docs/benchmarks.md).
 */
export function newRequestId(): string {
  if (used === POOL.length) {
    randomFillSync(POOL)
    used = 0
  }
  const at = used
  used += 16
  let out = 0
  for (let i = 0; i < 16; i++) {
    let b = POOL[at + i]!
    if (i === 6)
      b = (b & 0x0f) | 0x40 // version 4
    else if (i === 8) b = (b & 0x3f) | 0x80 // the RFC's variant
    if (i === 4 || i === 6 || i === 8 || i === 10) TEXT[out++] = DASH
    TEXT[out++] = HIGH[b]!
    TEXT[out++] = LOW[b]!
  }
  return TEXT.toString('latin1', 0, 36)
}
