import { createHmac, randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { parseDuration } from '../common/validation.ts'
import type { Env } from '../config/env.ts'
import { HalyardError } from '../errors.ts'
import type { IndexedLog } from '../indexer/types.ts'
import { CidrAllowlist } from '../net/address-policy.ts'
import type { Hex } from '../types.ts'
import { matchKeys, parseConfig } from './config.ts'
import { decryptSecret, encryptSecret, generateSigningSecret, sign } from './crypto.ts'
import { topicsMatch } from './event-drafts.ts'
import { leaseFlags } from './matcher.ts'
import { staticHosts, webhookSettings } from './settings.ts'
import { checkWebhookUrl } from './url-policy.ts'
import { verifyWebhook } from './verify.ts'

const refusal = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(HalyardError)
  expect((err as HalyardError).status).toBe(400)
  return (err as HalyardError).message
}

describe('webhook target URLs', () => {
  it('dev mode allows loopback over http:// and https://, and nothing private', async () => {
    const dev = { devMode: true }
    expect(await checkWebhookUrl('http://127.0.0.1:9/hook', dev)).toBe('http://127.0.0.1:9/hook')
    expect(await checkWebhookUrl('https://[::1]:9/hook', dev)).toBe('https://[::1]:9/hook')
    expect(await checkWebhookUrl('http://localhost:9/', dev)).toBe('http://localhost:9/')
    expect(await checkWebhookUrl('http://[::ffff:127.0.0.1]:9/', dev)).toBe('http://[::ffff:7f00:1]:9/')
    expect(await refusal(checkWebhookUrl('http://8.8.8.8/', dev))).toMatch(
      /http:\/\/ is allowed only to loopback/,
    )
    expect(await refusal(checkWebhookUrl('http://10.0.0.1/', dev))).toMatch(
      /^url: 10\.0\.0\.1 is a private address/,
    )
    expect(await refusal(checkWebhookUrl('https://169.254.169.254/', dev))).toMatch(/link-local/)
    expect(await refusal(checkWebhookUrl('ftp://127.0.0.1/', dev))).toMatch(/^url: must be an https:\/\/ URL/)
  })

  it('production refuses loopback and http:// unless the operator allowlists a range', async () => {
    const prod = { devMode: false }
    expect(await refusal(checkWebhookUrl('https://127.0.0.1/', prod))).toMatch(/loopback/)
    expect(await refusal(checkWebhookUrl('http://127.0.0.1/', prod))).toMatch(
      /^url: must be an https:\/\/ URL$/,
    )
    expect(await refusal(checkWebhookUrl('https://u:p@8.8.8.8/', prod))).toMatch(/credentials/)
    const allowed = { devMode: false, allowlist: new CidrAllowlist(['10.1.0.0/16']) }
    expect(await checkWebhookUrl('https://10.1.2.3/h', allowed)).toBe('https://10.1.2.3/h')
    expect(await refusal(checkWebhookUrl('https://10.2.0.1/h', allowed))).toMatch(/private/)
    const hosts = { devMode: false, resolve: staticHosts('internal.test=192.168.1.5') }
    // Neither what a name resolves to nor whether it resolves at all: no DNS oracle.
    const internal = await refusal(checkWebhookUrl('https://internal.test/', hosts))
    expect(internal).toBe(
      'url: host internal.test does not resolve to a public address; private and internal targets are refused',
    )
    expect(internal).not.toContain('192.168')
    const nxdomain = {
      devMode: false,
      resolve: async () => {
        throw Object.assign(new Error('queryA ENOTFOUND'), { code: 'ENOTFOUND' })
      },
    }
    expect(await refusal(checkWebhookUrl('https://nowhere.test/', nxdomain))).toBe(
      'url: host nowhere.test does not resolve to a public address; private and internal targets are refused',
    )
    expect(await refusal(checkWebhookUrl(`https://x.test/${'a'.repeat(3000)}`, prod))).toMatch(/longer than/)
  })
})

describe('verifyWebhook', () => {
  const secret = generateSigningSecret()
  const body = JSON.stringify({ id: 'evt_1', data: { value: '1' } })
  const now = Math.floor(Date.now() / 1000)
  const headers = (ts: number, sig = sign(secret, ts, body)) => ({
    'X-Service-Timestamp': String(ts),
    'X-Service-Signature': sig,
  })

  it('accepts what the service signs, as text, bytes or fetch Headers', () => {
    expect(verifyWebhook(body, headers(now), secret)).toEqual({ ok: true, form: 'A' })
    expect(verifyWebhook(Buffer.from(body), headers(now), secret)).toEqual({ ok: true, form: 'A' })
    expect(verifyWebhook(body, new Headers(headers(now)), secret)).toEqual({ ok: true, form: 'A' })
    // Independent of our helper: Node's crypto over `{timestamp}.{raw body}`.
    expect(sign(secret, now, body)).toBe(createHmac('sha256', secret).update(`${now}.${body}`).digest('hex'))
  })

  it('refuses a changed body, a wrong secret, a stale or future timestamp and missing headers', () => {
    // Read here, not at collection: under load the file may be collected seconds before this
    // runs, and `now + 301` would then be within the tolerance.
    const now = Math.floor(Date.now() / 1000)
    expect(verifyWebhook(`${body} `, headers(now), secret)).toEqual({
      ok: false,
      reason: 'signature mismatch',
    })
    expect(verifyWebhook(body, headers(now), generateSigningSecret()).ok).toBe(false)
    expect(verifyWebhook(body, headers(now - 301), secret)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/300 seconds/),
    })
    expect(verifyWebhook(body, headers(now + 301), secret).ok).toBe(false)
    expect(verifyWebhook(body, headers(now - 100), secret, { toleranceSeconds: 60 }).ok).toBe(false)
    expect(verifyWebhook(body, {}, secret)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/X-Service-Signature/),
    })
    expect(verifyWebhook(body, headers(now, 'ZZ'), secret)).toMatchObject({ ok: false })
    // The signed timestamp is the header text: a re-formatted number does not verify.
    expect(verifyWebhook(body, { ...headers(now), 'X-Service-Timestamp': `0${now}` }, secret).ok).toBe(false)
  })
})

describe('secrets at rest', () => {
  it('encrypts with AES-256-GCM under the secret key; the wrong key cannot read it', () => {
    const key = randomBytes(32)
    const secret = generateSigningSecret()
    const stored = encryptSecret(secret, key)
    expect(stored).not.toContain(secret.slice(6))
    expect(decryptSecret(stored, key)).toBe(secret)
    expect(encryptSecret(secret, key)).not.toBe(stored)
    expect(() => decryptSecret(stored, randomBytes(32))).toThrow()
  })
})

describe('config', () => {
  it('normalises addresses and hashes and indexes them for matching', () => {
    const a = '0x00000000000000000000000000000000000A11CE'
    const cfg = parseConfig('token_transfer', { addresses: [a, a.toLowerCase()], min_value: '007' })
    expect(cfg).toEqual({ addresses: [a.toLowerCase()], min_value: '7' })
    expect(matchKeys('token_transfer', cfg)).toEqual([{ kind: 'addr', key: a.toLowerCase() }])
    expect(matchKeys('nft_transfer', parseConfig('nft_transfer', {}))).toEqual([{ kind: 'any', key: '*' }])
    expect(() => parseConfig('token_transfer', { min_value: '-1' })).toThrow(/config\.min_value/)
  })

  it('matches topics as eth_getLogs does', () => {
    const t = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hex
    const log: IndexedLog = { address: '0x', topics: [t(1), t(2)], data: '0x', txHash: t(9), logIndex: 0 }
    expect(topicsMatch(undefined, log)).toBe(true)
    expect(topicsMatch([t(1)], log)).toBe(true)
    expect(topicsMatch([null, [t(3), t(2)]], log)).toBe(true)
    expect(topicsMatch([t(2)], log)).toBe(false)
    expect(topicsMatch([null, null, t(3)], log)).toBe(false)
  })

  it('parses delivery durations', () => {
    expect(['500ms', '10s', '1m', '6h'].map(parseDuration)).toEqual([500, 10_000, 60_000, 21_600_000])
  })

  it('refuses a zero delivery timeout at start-up, naming the variable', () => {
    const env = { dataDir: '/tmp', HALYARD_WEBHOOK_TIMEOUT: '0ms' } as unknown as Env
    expect(() => webhookSettings(env, false)).toThrow(/HALYARD_WEBHOOK_TIMEOUT/)
    expect(webhookSettings({ ...env, HALYARD_WEBHOOK_TIMEOUT: '1s' }, false).delivery.timeoutMs).toBe(1000)
  })
})

describe('leaseFlags', () => {
  const ev = (webhook_id: string) => ({
    id: 'evt',
    webhook_id,
    network: null,
    block_number: null,
    event_type: 'log',
    body: '{}',
  })
  it("leases each webhook's first perLane events, for the first `lanes` webhooks only", () => {
    const events = ['a', 'b', 'a', 'c', 'a', 'b', 'a'].map(ev)
    // a: 3 of its 4 leased (perLane 3); b: both; c: no room left (2 lanes).
    expect(leaseFlags(events, 2, 3)).toEqual([true, true, true, false, true, true, false])
    expect(leaseFlags(events, 0, 3)).toEqual(events.map(() => false))
  })
})
