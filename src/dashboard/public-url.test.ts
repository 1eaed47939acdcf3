import http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SmtpSink } from '../../test/fixtures/webhooks/smtp-sink.ts'
import { startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends, type TestStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { SIGN_IN_LIMITS, signInBucket } from './sessions.ts'

/**
 * The dashboard believes only its configured public URL (HALYARD_PUBLIC_URL) about where it
 * lives, and X-Forwarded-* only from trusted proxies (HALYARD_TRUSTED_PROXIES); see
 * docs/behind-a-proxy.md. Requests go over real sockets with the Host and X-Forwarded-* headers
 * a client (or a proxy) sets; the sign-in e-mails are read from a real SMTP sink.
 */

const PUBLIC = 'http://halyard.test:8080'
const HOST = 'halyard.test:8080'

interface Answer {
  status: number
  headers: http.IncomingHttpHeaders
  text: string
}

function request(
  port: number,
  method: 'GET' | 'POST',
  path: string,
  headers: Record<string, string>,
  form?: Record<string, string>,
): Promise<Answer> {
  const body = form ? new URLSearchParams(form).toString() : undefined
  return new Promise((resolve, reject) => {
    const r = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        headers: {
          accept: 'application/json',
          ...(body === undefined
            ? {}
            : {
                'content-type': 'application/x-www-form-urlencoded',
                'content-length': String(Buffer.byteLength(body)),
              }),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString(),
          }),
        )
      },
    )
    r.on('error', reject)
    r.end(body)
  })
}

const portOf = (h: TestHalyard) => Number(new URL(h.halyard.origin).port)

/** A browser on the public URL: its Host and Origin. */
const browser = { host: HOST, origin: PUBLIC }

/** Uses up a client address's sign-in requests for today in the server's own limiter. */
async function exhaust(h: TestHalyard, ip: string) {
  const perDay = { ...SIGN_IN_LIMITS, requestsPerSecond: null }
  for (let i = 0; i <= SIGN_IN_LIMITS.requestsPerDay; i++) {
    const d = await h.halyard.ctx.limiter.consume(signInBucket(ip), perDay, { requests: 1, computeUnits: 0 })
    if (!d.allowed) return
  }
  throw new Error(`the sign-in limit of ${ip} never ran out`)
}

describe('dashboard: public URL and trusted proxies', () => {
  let storage: TestStorage
  let smtp: SmtpSink
  /** No trusted proxies: X-Forwarded-* are a client's word. */
  let direct: TestHalyard
  /** Behind a proxy on 127.0.0.1 (and a second tier in 10.0.0.0/8). */
  let proxied: TestHalyard

  beforeAll(async () => {
    storage = await storageBackends()[0]!.open()
    smtp = await new SmtpSink().start()
    direct = await startTestHalyard({
      networks: [],
      storage,
      env: { HALYARD_PUBLIC_URL: PUBLIC, SMTP_URL: smtp.url },
    })
    proxied = await startTestHalyard({
      networks: [],
      storage,
      env: { HALYARD_PUBLIC_URL: PUBLIC, HALYARD_TRUSTED_PROXIES: '127.0.0.1, 10.0.0.0/8' },
    })
  })
  afterAll(async () => {
    await direct?.close()
    await proxied?.close()
    await storage?.close()
    await smtp?.stop()
  })

  const account = async () => {
    const email = `victim-${Math.random().toString(36).slice(2, 10)}@test.local`
    return direct.halyard.ctx.auth.createAccount(email)
  }

  it('a forged Host is refused and mails nothing; the real sign-in mails a link to the public URL', async () => {
    const victim = await account()
    const port = portOf(direct)
    const forged = await request(
      port,
      'POST',
      '/dashboard/sign-in',
      {
        host: 'login.attacker.example',
        origin: 'http://login.attacker.example',
      },
      { email: victim.email },
    )
    expect(forged.status).toBe(400)
    expect(forged.headers['x-frame-options']).toBe('DENY')
    expect(JSON.parse(forged.text)).toEqual({
      error: {
        code: 'invalid_request',
        status: 400,
        message: expect.stringMatching(
          /Host "login\.attacker\.example" is not this dashboard's host halyard\.test:8080/,
        ),
      },
    })
    // Every dashboard route, not only the sign-in form; the API is not the dashboard's business.
    expect(
      (await request(port, 'GET', '/dashboard/sign-in', { host: 'login.attacker.example' })).status,
    ).toBe(400)
    expect((await request(port, 'GET', '/dashboard/sign-in', { host: 'HALYARD.test:8080' })).status).toBe(200)
    expect((await request(port, 'GET', '/health', { host: 'login.attacker.example' })).status).toBe(200)
    // The right Host with another site's Origin is still cross-site.
    const crossSite = await request(
      port,
      'POST',
      '/dashboard/sign-in',
      { host: HOST, origin: 'http://login.attacker.example' },
      { email: victim.email },
    )
    expect(crossSite.status).toBe(403)
    expect(crossSite.text).toMatch(
      /Origin http:\/\/login\.attacker\.example is not http:\/\/halyard\.test:8080/,
    )

    const real = await request(port, 'POST', '/dashboard/sign-in', browser, { email: victim.email })
    expect(real.status, real.text).toBe(200)
    const mail = await until('the sign-in e-mail', () => smtp.mails.find((m) => m.to.includes(victim.email)))
    const mails = smtp.mails.filter((m) => m.to.includes(victim.email))
    expect(mails).toHaveLength(1)
    expect(mail.raw).not.toMatch(/attacker/)
    expect(mail.raw.replace(/=\r?\n/g, '')).toMatch(
      /http:\/\/halyard\.test:8080\/dashboard\/sign-in\/link\?token=3D[A-Za-z0-9_-]{43}|http:\/\/halyard\.test:8080\/dashboard\/sign-in\/link\?token=[A-Za-z0-9_-]{43}/,
    )
  })

  it('X-Forwarded-For from an untrusted peer is ignored: the sign-in limit counts the peer', async () => {
    const victim = await account()
    const port = portOf(direct)
    await exhaust(direct, '203.0.113.7')
    // The forwarded address is not believed, so its exhausted bucket does not apply...
    const spoofed = { ...browser, 'x-forwarded-for': '203.0.113.7' }
    expect((await request(port, 'POST', '/dashboard/sign-in', spoofed, { email: victim.email })).status).toBe(
      200,
    )
    // ...and a made-up one does not buy a fresh bucket once the peer's is used up.
    await exhaust(direct, '127.0.0.1')
    for (const xff of ['198.51.100.1', '198.51.100.2, 10.0.0.1', '127.0.0.1']) {
      const ans = await request(
        port,
        'POST',
        '/dashboard/sign-in',
        { ...browser, 'x-forwarded-for': xff },
        {
          email: victim.email,
        },
      )
      expect(ans.status, xff).toBe(429)
    }
  })

  it('X-Forwarded-For from a trusted proxy is honoured: one bucket per forwarded client', async () => {
    const victim = await account()
    const port = portOf(proxied)
    await exhaust(proxied, '203.0.113.7')
    const signIn = (xff: string | undefined) =>
      request(port, 'POST', '/dashboard/sign-in', xff ? { ...browser, 'x-forwarded-for': xff } : browser, {
        email: victim.email,
      })
    expect((await signIn('203.0.113.7')).status).toBe(429)
    expect((await signIn('203.0.113.8')).status).toBe(200)
    // Walked from the right: a trusted second proxy (10.x) is skipped, and what the client
    // wrote on the left of its real address changes nothing.
    expect((await signIn('203.0.113.7, 10.1.2.3')).status).toBe(429)
    expect((await signIn('198.51.100.9, 203.0.113.7')).status).toBe(429)
    expect((await signIn('203.0.113.7, 198.51.100.9')).status).toBe(200)
    // A malformed hop stops the walk at the proxy that forwarded it: its address, not the text.
    expect((await signIn('203.0.113.7, not-an-ip')).status).toBe(200)
    // No header: the proxy's own address.
    expect((await signIn(undefined)).status).toBe(200)
  })

  it('X-Forwarded-Proto is believed from a trusted proxy only (the cookie is Secure), and the session records the client', async () => {
    const signIn = async (h: TestHalyard, headers: Record<string, string>) => {
      const a = await account()
      const link = await h.halyard.services.dashboard.createLink(a.id, h.halyard.publicOrigin)
      expect(link.startsWith(`${PUBLIC}/dashboard/sign-in/link?token=`)).toBe(true)
      const token = new URL(link).searchParams.get('token') ?? ''
      const ans = await request(
        portOf(h),
        'POST',
        '/dashboard/sign-in/link',
        { ...browser, ...headers },
        { token },
      )
      expect(ans.status, ans.text).toBe(303)
      const [session] = await h.halyard.services.dashboard.list(a.id)
      return { cookie: String(ans.headers['set-cookie']), ip: session?.ip }
    }
    const https = { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.50' }
    const viaProxy = await signIn(proxied, https)
    expect(viaProxy.cookie).toMatch(/; Secure$/)
    expect(viaProxy.ip).toBe('203.0.113.50')
    const fromClient = await signIn(direct, https)
    expect(fromClient.cookie).not.toMatch(/Secure/)
    expect(fromClient.ip).toBe('127.0.0.1')
    // The nearest proxy's value counts (it appends the scheme its client used).
    expect((await signIn(proxied, { 'x-forwarded-proto': 'https, http' })).cookie).not.toMatch(/Secure/)
  })
})
