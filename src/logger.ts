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

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: undefined }, destination)
}

export type { Logger }
