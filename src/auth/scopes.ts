/** Spec section 5: the scopes a key may hold. A key created without scopes has all of them. */
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

/**
 * JSON-RPC methods that need a scope other than `rpc:read`. Write methods need only
 * `rpc:write` (DESIGN.md: "also needs nothing else").
 */
const RPC_METHOD_SCOPES: Readonly<Record<string, Scope>> = {
  eth_sendRawTransaction: 'rpc:write',
  eth_sendRawTransactionSync: 'rpc:write',
  sendTransaction: 'rpc:write',
}

export function scopeForRpcMethod(method: string): Scope {
  return RPC_METHOD_SCOPES[method] ?? 'rpc:read'
}

/**
 * REST route prefixes under /v1 → scope. Routes declare their scope through this table so
 * that one place answers "what may this key do".
 */
export const ROUTE_SCOPES: ReadonlyArray<readonly [prefix: string, scope: Scope]> = [
  ['/v1/tokens/', 'data:read'],
  ['/v1/nfts/', 'data:read'],
  ['/v1/gas/policies', 'gas:manage'],
  ['/v1/gas/sponsor', 'gas:manage'],
  ['/v1/paymaster/', 'gas:manage'],
  ['/v1/gas/', 'data:read'],
  ['/v1/wallets', 'wallets:manage'],
  ['/v1/webhooks', 'webhooks:manage'],
  ['/v1/bundler/', 'bundler:send'],
]

export function scopeForRoute(url: string): Scope | undefined {
  for (const [prefix, scope] of ROUTE_SCOPES) if (url.startsWith(prefix)) return scope
  return undefined
}
