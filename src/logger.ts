import pino, { type Logger } from 'pino'

/** Paths never logged: keys, admin tokens and signing secrets. */
export const REDACT_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.query.apiKey',
  'headers["x-api-key"]',
  'headers.authorization',
  '*.signing_secret',
  '*.secret',
  '*.key',
  '*.token',
  '*.apiKey',
]

/** A Halyard key (`halyard_live_…`, `halyard_test_…`) in any case, `_` also percent-encoded. */
const KEY_LIKE = /halyard(?:_|%5f)(?:live|test)(?:_|%5f)[0-9a-z]*/gi
/** The segment after `v2` or `nft/v3`, where the Alchemy-compatible root carries its key. */
const KEY_SEGMENT = /(\/(?:v2|nft\/v3))\/[^/?#]+/gi

/**
 * A URL (or a message repeating one) with every key in it replaced: for log lines and messages
 * that repeat a path. Not tied to the routes' exact spelling: a mistyped path (`/V2/{key}`,
 * `//v1/alchemy/…`, no `/v1`) is where a key goes unrecognised by the router and so is echoed.
 */
export function redactUrl(url: string): string {
  return url.replace(KEY_SEGMENT, '$1/[redacted]').replace(KEY_LIKE, '[redacted]')
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: undefined }, destination)
}

export type { Logger }
