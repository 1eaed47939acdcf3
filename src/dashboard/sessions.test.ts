import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeEachStorage, type TestStorage } from '../../test/helpers/storage.ts'
import { AuthService } from '../auth/service.ts'
import { AuthStore } from '../auth/store.ts'
import { HalyardError } from '../errors.ts'
import { MemoryRateLimiter } from '../limits/memory-limiter.ts'
import { escapeHtml, html, raw } from './html.ts'
import { createLoginLink, DashboardSessions, hashToken } from './sessions.ts'

const tokenOf = (link: string) => new URL(link).searchParams.get('token') ?? ''

describeEachStorage('dashboard sign-in links and sessions on $name', (backend) => {
  let storage: TestStorage
  let auth: AuthService
  let sessions: DashboardSessions
  const account = async () => auth.createAccount(`s-${randomBytes(4).toString('hex')}@test.local`)

  beforeAll(async () => {
    storage = await backend.open()
    auth = new AuthService(new AuthStore(storage.db))
    sessions = new DashboardSessions(storage.db, auth, new MemoryRateLimiter())
  })
  afterAll(async () => storage?.close())

  it('stores only hashes: a link works once, and its session is found by the cookie token', async () => {
    const a = await account()
    const link = await sessions.createLink(a.id, 'http://127.0.0.1:8080/')
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:8080\/dashboard\/sign-in\/link\?token=[A-Za-z0-9_-]{43}$/)
    const token = tokenOf(link)
    const stored = await storage.db
      .selectFrom('dashboard_login_tokens')
      .selectAll()
      .where('account_id', '=', a.id)
      .execute()
    expect(stored.map((r) => r.token_hash)).toEqual([hashToken(token)])
    expect(JSON.stringify(stored)).not.toContain(token)

    const opened = await sessions.signIn(token, { userAgent: 'test', ip: '127.0.0.1' })
    expect(opened?.accountId).toBe(a.id)
    expect(await sessions.signIn(token, {})).toBeUndefined()
    const s = await sessions.session(opened?.token ?? '')
    expect(s).toMatchObject({ account_id: a.id, email: a.email })
    const rows = await storage.db
      .selectFrom('dashboard_sessions')
      .selectAll()
      .where('account_id', '=', a.id)
      .execute()
    expect(JSON.stringify(rows)).not.toContain(opened?.token)
  })

  it('two sign-ins racing with one link: exactly one session', async () => {
    const a = await account()
    const token = tokenOf(await createLoginLink(storage.db, a.id, 'http://x.test'))
    const results = await Promise.all(Array.from({ length: 5 }, () => sessions.signIn(token, {})))
    expect(results.filter(Boolean)).toHaveLength(1)
  })

  it('refuses an expired link, and ends revoked and expired sessions', async () => {
    const a = await account()
    const token = tokenOf(await sessions.createLink(a.id, 'http://x.test'))
    // 15 minutes pass (the clock is the database's).
    await sql`update dashboard_login_tokens set expires_at = now() - interval '1 second' where token_hash = ${hashToken(token)}`.execute(
      storage.db,
    )
    expect(await sessions.signIn(token, {})).toBeUndefined()

    const one = await sessions.signIn(tokenOf(await sessions.createLink(a.id, 'http://x.test')), {})
    const two = await sessions.signIn(tokenOf(await sessions.createLink(a.id, 'http://x.test')), {})
    expect((await sessions.list(a.id)).length).toBe(2)
    const firstId = (await sessions.session(one?.token ?? ''))?.id ?? ''
    // Another account cannot end this account's session by its id.
    const other = await account()
    expect(await sessions.revoke(other.id, firstId)).toBe(0)
    expect(await sessions.revoke(a.id, firstId)).toBe(1)
    expect(await sessions.session(one?.token ?? '')).toBeUndefined()
    expect(await sessions.session(two?.token ?? '')).toBeDefined()
    await sql`update dashboard_sessions set expires_at = now() - interval '1 second' where account_id = ${a.id}`.execute(
      storage.db,
    )
    expect(await sessions.session(two?.token ?? '')).toBeUndefined()
    expect(await sessions.session('not-a-session-token-at-all-xx')).toBeUndefined()
  })

  it('e-mails a link only for a known address, at most 5 per 15 minutes, and limits requests per client address', async () => {
    const a = await account()
    const outbox = () =>
      storage.db.selectFrom('mail_outbox').selectAll().where('to_address', '=', a.email).execute()
    for (let i = 0; i < 7; i++)
      await sessions.requestLink(a.email.toUpperCase(), `10.0.0.${i}`, 'http://x.test')
    const mails = await outbox()
    expect(mails).toHaveLength(5)
    expect(mails[0]?.body).toMatch(/http:\/\/x\.test\/dashboard\/sign-in\/link\?token=/)
    await sessions.requestLink('nobody@test.local', '10.0.1.1', 'http://x.test')
    expect(
      await storage.db
        .selectFrom('mail_outbox')
        .selectAll()
        .where('to_address', '=', 'nobody@test.local')
        .execute(),
    ).toEqual([])

    // Per client address: 2 per second (the shared limiter), then 429 with Retry-After. Five at
    // once: even split by a second boundary, one window holds three.
    const ip = '10.9.9.9'
    const tries = await Promise.allSettled(
      [1, 2, 3, 4, 5].map(() => sessions.requestLink('nobody@test.local', ip, 'http://x.test')),
    )
    const refused = tries.find((t) => t.status === 'rejected') as PromiseRejectedResult | undefined
    expect(refused?.reason).toBeInstanceOf(HalyardError)
    expect(refused?.reason).toMatchObject({ code: 'rate_limited' })
    expect((refused?.reason as HalyardError | undefined)?.headers['retry-after']).toMatch(/^\d+$/)
  })
})

it('html`` escapes every interpolated value, and only raw() passes markup', () => {
  const name = `<script>alert("x")</script>' onload=\`x\``
  expect(html`<td title="${name}">${name}</td>`.value).toBe(
    `<td title="${escapeHtml(name)}">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onload=&#96;x&#96;</td>`,
  )
  expect(html`${[name, html`<b>${name}</b>`]}`.value).not.toContain('<script>')
  expect(html`${raw('<b>ok</b>')}${null}${undefined}${false}${0}`.value).toBe('<b>ok</b>0')
})
