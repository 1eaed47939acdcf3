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

/**
 * A URL with the keys the Alchemy-compatible root carries in its path (`/v1/alchemy/{network}/v2/{key}`,
 * `/v1/alchemy/{network}/nft/v3/{key}`) replaced: for log lines and messages that repeat a path.
 */
export function redactUrl(url: string): string {
  return url.replace(/^((?:\/v1)?\/alchemy\/[^/?#]*\/(?:v2|nft\/v3))\/[^/?#]+/, '$1/[redacted]')
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: undefined }, destination)
}

export type { Logger }
