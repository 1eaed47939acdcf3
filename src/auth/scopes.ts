/** The scopes a key may hold (docs/concepts.md). A key created without scopes has all of them. */
export const SCOPES = [
  'rpc:read',
  'rpc:write',
  'data:read',
  'wallets:manage',
  'webhooks:manage',
  'gas:manage',
  'bundler:send',
] as const

export type Scope = (typeof SCOPES)[number]

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s)
