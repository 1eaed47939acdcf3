import http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { selfSignedCert } from '../../test/fixtures/net/test-cert.ts'
import { blockedReason, CidrAllowlist, embeddedIpv4 } from './address-policy.ts'
import { checkTarget, safeFetch } from './safe-fetch.ts'

describe('address policy', () => {
  it.each([
    '127.0.0.1',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '::',
    'fd00::1',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:a00:1',
    '::ffff:169.254.169.254',
    '64:ff9b::10.0.0.1',
    '2002:a00:1::',
  ])('refuses %s', (ip) => {
    expect(blockedReason(ip)).not.toBeNull()
  })

  it.each(['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('allows public %s', (ip) => {
    expect(blockedReason(ip)).toBeNull()
  })

  it('names the range in the reason', () => {
    expect(blockedReason('169.254.169.254')).toMatch(/link-local/)
    expect(blockedReason('100.64.1.1')).toMatch(/carrier-grade NAT/)
    expect(blockedReason('::ffff:10.0.0.1')).toMatch(/private.*IPv4 embedded/)
  })

  it('loopback allowance covers loopback only', () => {
    expect(blockedReason('127.0.0.1', { allowLoopback: true })).toBeNull()
    expect(blockedReason('::1', { allowLoopback: true })).toBeNull()
    expect(blockedReason('::ffff:127.0.0.1', { allowLoopback: true })).toBeNull()
    expect(blockedReason('10.0.0.1', { allowLoopback: true })).not.toBeNull()
    expect(blockedReason('169.254.169.254', { allowLoopback: true })).not.toBeNull()
  })

  it('operator allowlist opens exactly its ranges', () => {
    const allowlist = new CidrAllowlist(['10.1.2.0/24', 'fd00:1::/32'])
    expect(blockedReason('10.1.2.7', { allowlist })).toBeNull()
    expect(blockedReason('10.1.3.7', { allowlist })).not.toBeNull()
    expect(blockedReason('fd00:1::5', { allowlist })).toBeNull()
    expect(() => new CidrAllowlist(['10.0.0.0/33'])).toThrow(/invalid CIDR/)
    expect(() => new CidrAllowlist(['nope'])).toThrow(/invalid CIDR/)
  })

  it('unwraps embedded IPv4', () => {
    expect(embeddedIpv4('::ffff:10.0.0.1')).toEqual({ form: 'IPv4-mapped', ipv4: ['10.0.0.1'] })
    expect(embeddedIpv4('::ffff:a00:1')).toEqual({ form: 'IPv4-mapped', ipv4: ['10.0.0.1'] })
    expect(embeddedIpv4('::ffff:0:a9fe:a9fe')).toEqual({ form: 'SIIT', ipv4: ['169.254.169.254'] })
    expect(embeddedIpv4('64:ff9b:1::a9fe:a9fe')).toEqual({
      form: 'local-use NAT64',
      ipv4: ['169.254.169.254'],
    })
    expect(embeddedIpv4('2002:a00:1::')).toEqual({ form: '6to4', ipv4: ['10.0.0.1'] })
    // RFC 4380's example: server 65.54.227.120, client 192.0.2.45 stored inverted.
    expect(embeddedIpv4('2001:0:4136:e378:8000:63bf:3fff:fdd2')).toEqual({
      form: 'Teredo',
      ipv4: ['65.54.227.120', '192.0.2.45'],
    })
    expect(embeddedIpv4('2606:4700::1')).toBeNull()
    expect(embeddedIpv4('::1')).toBeNull()
  })
})

/** Every IPv6 spelling that carries an IPv4, built from the IPv4 it carries. */
const hex = (v4: string) => {
  const [a, b, c, d] = v4.split('.').map(Number) as [number, number, number, number]
  return [(a << 8) | b, (c << 8) | d] as const
}
const h = (n: number) => n.toString(16)
const GLOBAL_V4 = '8.8.4.4'
const embeddings: Array<[string, (v4: string) => string]> = [
  ['IPv4-mapped', (v4) => `::ffff:${v4}`],
  ['NAT64 64:ff9b::/96', (v4) => `64:ff9b::${v4}`],
  ['NAT64 64:ff9b::/96 (hex)', (v4) => `64:ff9b::${hex(v4).map(h).join(':')}`],
  ['local-use NAT64 64:ff9b:1::/48', (v4) => `64:ff9b:1::${hex(v4).map(h).join(':')}`],
  ['SIIT ::ffff:0:0/96', (v4) => `::ffff:0:${hex(v4).map(h).join(':')}`],
  ['IPv4-compatible ::a.b.c.d', (v4) => `::${v4}`],
  ['6to4 2002::/16', (v4) => `2002:${hex(v4).map(h).join(':')}::1`],
  [
    'Teredo server',
    (v4) =>
      `2001:0:${hex(v4).map(h).join(':')}:8000:63bf:${hex(GLOBAL_V4)
        .map((g) => h(g ^ 0xffff))
        .join(':')}`,
  ],
  [
    'Teredo client',
    (v4) =>
      `2001:0:${hex(GLOBAL_V4).map(h).join(':')}:8000:63bf:${hex(v4)
        .map((g) => h(g ^ 0xffff))
        .join(':')}`,
  ],
]
const internalV4: Array<[string, RegExp]> = [
  ['127.0.0.1', /loopback/],
  ['10.0.0.1', /private/],
  ['172.16.5.4', /private/],
  ['172.31.255.1', /private/],
  ['192.168.1.1', /private/],
  ['169.254.1.1', /link-local/],
  ['169.254.169.254', /link-local/],
]

describe('address policy: IPv4 embedded in IPv6', () => {
  it.each(
    embeddings.flatMap(([form, make]) => internalV4.map(([v4, why]) => [form, v4, make(v4), why] as const)),
  )('refuses the %s form of %s (%s)', (_form, v4, ip, why) => {
    const reason = blockedReason(ip)
    expect(reason).toMatch(why)
    expect(reason).toContain(v4)
    // Dev mode's loopback allowance is for our own loopback, not a translator's or relay's.
    if (!ip.startsWith('::ffff:') || ip.startsWith('::ffff:0:'))
      expect(blockedReason(ip, { allowLoopback: true })).not.toBeNull()
  })

  it.each([
    'https://[64:ff9b:1::a9fe:a9fe]/x',
    'https://[::ffff:0:a9fe:a9fe]/x',
    'https://[64:ff9b::a9fe:a9fe]/x',
  ])('refuses the metadata service behind %s as a webhook-style target', async (url) => {
    const check = await checkTarget(new URL(url), { protocols: ['https:'] })
    expect(check).toMatchObject({ ok: false, kind: 'blocked_address' })
    expect(check.ok ? '' : check.reason).toMatch(/169\.254\.169\.254 is a link-local address/)
  })

  it.each([
    '64:ff9b::8.8.8.8',
    '64:ff9b:1::808:808',
    '::ffff:0:1.1.1.1',
    '2002:808:808::1',
    `2001:0:4136:e378:8000:63bf:${hex(GLOBAL_V4)
      .map((g) => h(g ^ 0xffff))
      .join(':')}`,
    '2a00:1450:4001:80b::200e',
  ])('allows %s, which carries or is a global unicast address', (ip) => {
    expect(blockedReason(ip)).toBeNull()
  })

  it.each([
    ['::8.8.8.8', /deprecated IPv4-compatible/],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /192\.0\.2\.45 is a reserved address/],
    ['64:ff9b:1:1::a9fe:a9fe', /local-use NAT64 address with no recognizable IPv4/],
    ['64:ff9b::0.0.0.0', /unspecified/],
    ['2002:e000:1::1', /multicast/],
    ['3fff::1', /reserved/],
    ['100:0:0:1::1', /dummy prefix/],
    ['2001:db8::1', /reserved/],
    ['5f00::1', /segment-routing/],
    ['4000::1', /not a global unicast/],
    ['fec0::1', /site-local/],
    ['fe80::1%eth0', /link-local/],
  ])('refuses %s', (ip, why) => {
    expect(blockedReason(ip)).toMatch(why)
  })

  it('the operator allowlist opens an allowlisted IPv4 in its mapped spelling only', () => {
    const allowlist = new CidrAllowlist(['10.1.2.0/24'])
    expect(blockedReason('::ffff:10.1.2.7', { allowlist })).toBeNull()
    expect(blockedReason('64:ff9b::10.1.2.7', { allowlist })).not.toBeNull()
  })
})

describe('safeFetch against real servers', () => {
  const { key, cert } = selfSignedCert()
  const seen: Array<{ method?: string; url?: string; host?: string; body: string }> = []
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    let body = ''
    req.on('data', (c) => {
      body += c
    })
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, host: req.headers.host, body })
      if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' }).end()
      } else if (req.url === '/big') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(10_000))
      } else if (req.url === '/hang') {
        // never answers
      } else {
        res.writeHead(201, { 'content-type': 'application/json', 'x-echo': req.headers['x-test'] ?? '' })
        res.end(JSON.stringify({ got: body }))
      }
    })
  }
  const plain = http.createServer(handler)
  const tls = https.createServer({ key, cert }, handler)
  let plainUrl = ''
  let tlsUrl = ''

  beforeAll(async () => {
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r))
    await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r))
    plainUrl = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`
    tlsUrl = `https://localhost:${(tls.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    plain.closeAllConnections()
    tls.closeAllConnections()
    await new Promise((r) => plain.close(r))
    await new Promise((r) => tls.close(r))
  })

  it('refuses loopback unless allowed', async () => {
    const r = await safeFetch(`${plainUrl}/x`)
    expect(r.ok).toBe(false)
    if (!r.ok) {
      expect(r.kind).toBe('blocked_address')
      expect(r.message).toMatch(/127\.0\.0\.1 is a loopback address/)
    }
    const before = seen.length
    expect(seen.length).toBe(before)
  })

  it('POSTs with method, headers and body and returns status, headers, body', async () => {
    const r = await safeFetch(`${plainUrl}/echo`, {
      method: 'POST',
      headers: { 'x-test': 'yes', 'content-type': 'text/plain' },
      body: 'hello',
      allowLoopback: true,
    })
    expect(r.ok).toBe(true)
    if (r.ok) {
      expect(r.status).toBe(201)
      expect(r.headers['x-echo']).toBe('yes')
      expect(JSON.parse(r.body.toString())).toEqual({ got: 'hello' })
      expect(r.address).toBe('127.0.0.1')
    }
  })

  it('does not follow redirects', async () => {
    const r = await safeFetch(`${plainUrl}/redirect`, { allowLoopback: true })
    expect(r.ok).toBe(false)
    if (!r.ok) {
      expect(r.kind).toBe('redirect')
      expect(r.status).toBe(302)
      expect(r.location).toBe('http://169.254.169.254/latest/meta-data')
    }
  })

  it('caps the body: fail or truncate', async () => {
    const failed = await safeFetch(`${plainUrl}/big`, { allowLoopback: true, maxBytes: 1000 })
    expect(failed.ok === false && failed.kind).toBe('too_large')
    const cut = await safeFetch(`${plainUrl}/big`, {
      allowLoopback: true,
      maxBytes: 1000,
      oversize: 'truncate',
    })
    expect(cut.ok && cut.truncated && cut.body.length).toBe(1000)
  })

  it('cuts a receiver that never answers at the timeout', async () => {
    const r = await safeFetch(`${plainUrl}/hang`, { allowLoopback: true, timeoutMs: 300 })
    expect(r.ok).toBe(false)
    if (!r.ok) {
      expect(r.kind).toBe('timeout')
      expect(r.message).toMatch(/300 ms/)
    }
  })

  it('verifies TLS: untrusted self-signed cert fails, trusted via ca succeeds', async () => {
    const untrusted = await safeFetch(`${tlsUrl}/echo`, { allowLoopback: true })
    expect(untrusted.ok === false && untrusted.kind).toBe('tls')
    const trusted = await safeFetch(`${tlsUrl}/echo`, {
      method: 'POST',
      body: 'x',
      allowLoopback: true,
      ca: cert,
    })
    expect(trusted.ok && trusted.status).toBe(201)
  })

  it('pins the connection to the checked address (hostname never re-resolved)', async () => {
    // A resolver override stands in for DNS: the OS resolver cannot be pointed at test records.
    const port = (tls.address() as AddressInfo).port
    const r = await safeFetch(`https://receiver.test:${port}/echo`, {
      allowLoopback: true,
      ca: cert,
      resolve: async () => [{ address: '127.0.0.1', family: 4 }],
    })
    expect(r.ok && r.address).toBe('127.0.0.1')
    expect(seen.at(-1)?.host).toBe(`receiver.test:${port}`)
  })

  it('refuses a hostname that resolves to a private address, and a mixed answer', async () => {
    const priv = await checkTarget(new URL('https://internal.example/'), {
      resolve: async () => [{ address: '10.0.0.1', family: 4 }],
    })
    expect(priv).toMatchObject({ ok: false, kind: 'blocked_address' })
    // The refusal never says what the name resolves to (a DNS oracle into the network).
    expect(priv.reason).toBe(
      'host internal.example does not resolve to a public address; private and internal targets are refused',
    )
    const mixed = await checkTarget(new URL('https://mixed.example/'), {
      resolve: async () => [
        { address: '8.8.8.8', family: 4 },
        { address: '169.254.169.254', family: 4 },
      ],
    })
    expect(mixed.ok).toBe(false)
  })

  it('refuses bad schemes, credentials, and hosts that do not resolve', async () => {
    expect(await checkTarget(new URL('ftp://x.example/'))).toMatchObject({ ok: false, kind: 'invalid_url' })
    expect(await checkTarget(new URL('https://u:p@x.example/'))).toMatchObject({
      ok: false,
      kind: 'invalid_url',
    })
    const https1 = await checkTarget(new URL('http://8.8.8.8/'), { protocols: ['https:'] })
    expect(https1.reason).toMatch(/scheme http: is not allowed/)
    const nx = await checkTarget(new URL('https://does-not-exist.invalid/'))
    expect(nx).toMatchObject({ ok: false, kind: 'dns' })
    const ipv6 = await checkTarget(new URL('https://[::1]/'))
    expect(ipv6).toMatchObject({ ok: false, kind: 'blocked_address' })
    const mapped = await checkTarget(new URL('https://[::ffff:169.254.169.254]/'))
    expect(mapped).toMatchObject({ ok: false, kind: 'blocked_address' })
  })

  it('reports a refused connection as a connect failure', async () => {
    const probe = http.createServer()
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r))
    const port = (probe.address() as AddressInfo).port
    await new Promise((r) => probe.close(r))
    const r = await safeFetch(`http://127.0.0.1:${port}/`, { allowLoopback: true, timeoutMs: 2000 })
    expect(r.ok === false && r.kind).toBe('connect')
  })
})
