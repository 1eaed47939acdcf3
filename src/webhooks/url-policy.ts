import { invalidRequest } from '../errors.ts'
import { blockedReason, type CidrAllowlist } from '../net/address-policy.ts'
import { checkTarget, type Resolver } from '../net/safe-fetch.ts'

export interface UrlPolicy {
  devMode: boolean
  /** Operator-approved private ranges (HALYARD_WEBHOOK_ALLOW_CIDRS). */
  allowlist?: CidrAllowlist
  /** Host overrides (HALYARD_WEBHOOK_HOSTS); answers are still checked like DNS answers. */
  resolve?: Resolver
}

const MAX_URL_LENGTH = 2048

/**
 * A webhook target as accepted at create/update time: HTTPS, and every address the
 * host resolves to must be public. Dev mode also allows http:// and https:// to loopback so a
 * newcomer can try webhooks on one machine; production refuses loopback and private ranges
 * unless the operator allowlists them. The same checks run again before every delivery
 * (safe-fetch), so a host that later resolves somewhere private is refused then too.
 * Returns the normalised URL; a refusal is a 400 whose message starts with the field.
 */
export async function checkWebhookUrl(raw: string, policy: UrlPolicy, field = 'url'): Promise<string> {
  if (raw.length > MAX_URL_LENGTH) throw invalidRequest(`${field}: longer than ${MAX_URL_LENGTH} characters`)
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw invalidRequest(`${field}: not a valid absolute URL`)
  }
  const dev = policy.devMode
  if (url.protocol !== 'https:' && !(dev && url.protocol === 'http:')) {
    throw invalidRequest(
      `${field}: must be an https:// URL${dev ? ' (http:// is allowed only to loopback in dev mode)' : ''}`,
    )
  }
  const check = await checkTarget(url, {
    allowLoopback: dev,
    allowlist: policy.allowlist,
    resolve: policy.resolve,
    protocols: ['http:', 'https:'],
  })
  if (!check.ok) {
    // A name that does not resolve and one that resolves inside are told apart by nobody: the
    // difference would say which internal names exist.
    if (check.kind === 'dns')
      throw invalidRequest(
        `${field}: host ${url.hostname} does not resolve to a public address; private and internal targets are refused`,
      )
    throw invalidRequest(`${field}: ${check.reason}`)
  }
  if (url.protocol === 'http:' && !isLoopback(check.address ?? '')) {
    throw invalidRequest(`${field}: http:// is allowed only to loopback in dev mode; use https://`)
  }
  return url.toString()
}

/** Loopback as the shared address policy sees it, in every spelling (URL gives ::ffff:7f00:1). */
function isLoopback(ip: string): boolean {
  return blockedReason(ip) !== null && blockedReason(ip, { allowLoopback: true }) === null
}
