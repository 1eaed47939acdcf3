import { z } from 'zod'
import { invalidRequest } from '../errors.ts'
import { html } from './html.ts'
import { csrfField, layout, notice, when } from './layout.ts'
import type { DashboardRoutes } from './route.ts'
import { SESSION_TTL_MS } from './sessions.ts'
import { clearSessionCookie, clientIp, field, parseForm, setSessionCookie, textField } from './web.ts'

const emailForm = z.object({
  email: textField(320).pipe(z.string().regex(/^[^\s@]+@[^\s@]+$/, { error: 'must be an e-mail address' })),
})

/** Sign-in by e-mailed link, sign-out, and the account page's session list. */
export function registerAuthPages(r: DashboardRoutes): void {
  const { sessions, site } = r

  r.open('GET', '/dashboard/sign-in', async () =>
    layout({
      title: 'Sign in',
      body: html`<p>Enter the e-mail address of your Halyard account. We will e-mail you a sign-in link that works once, for 15 minutes.</p>
<form method="post" action="/dashboard/sign-in" class="stack">
<label for="email">E-mail</label>
<input id="email" name="email" type="email" autocomplete="email" required maxlength="320">
<button type="submit">E-mail me a sign-in link</button>
</form>`,
    }),
  )

  r.open('POST', '/dashboard/sign-in', async ({ request, form }) => {
    const { email } = parseForm(emailForm, { email: field(form, 'email') })
    // The link points at the public URL, never at the request's Host (which a client chooses);
    // the limit counts the client's address, behind trusted proxies the one they forwarded.
    await sessions.requestLink(email, clientIp(site, request), site.origin())
    // The same answer whether or not the address has an account.
    return layout({
      title: 'Check your e-mail',
      body: html`${notice('ok', `If ${email} has a Halyard account, a sign-in link is on its way. It works once and expires in 15 minutes.`)}`,
    })
  })

  // Opening the link only shows a button: mail scanners that fetch links must not use it up.
  r.open('GET', '/dashboard/sign-in/link', async ({ request }) => {
    const token = (request.query as Record<string, unknown>).token
    const t = typeof token === 'string' ? token.slice(0, 200) : ''
    return layout({
      title: 'Sign in',
      body: html`<form method="post" action="/dashboard/sign-in/link" class="stack">
<input type="hidden" name="token" value="${t}">
<button type="submit">Sign in to Halyard</button>
</form>`,
    })
  })

  r.open('POST', '/dashboard/sign-in/link', async ({ request, reply, form }) => {
    const token = field(form, 'token') ?? ''
    const opened =
      token.length > 0 && token.length <= 200
        ? await sessions.signIn(token, {
            userAgent: request.headers['user-agent'],
            ip: clientIp(site, request),
          })
        : undefined
    if (!opened)
      throw invalidRequest(
        'token: this sign-in link was already used, has expired or is not one of ours; ask for a new one at /dashboard/sign-in',
      )
    setSessionCookie(site, request, reply, opened.token, Math.floor(SESSION_TTL_MS / 1000))
    reply.redirect('/dashboard', 303)
    return undefined
  })

  r.signedIn('POST', '/dashboard/sign-out', async ({ request, reply, session }) => {
    await sessions.revoke(session.account_id, session.id)
    clearSessionCookie(site, request, reply)
    reply.redirect('/dashboard/sign-in', 303)
    return undefined
  })

  r.signedIn('GET', '/dashboard/account', async ({ session }) => {
    const live = await sessions.list(session.account_id)
    return layout({
      title: 'Account',
      session,
      current: '/dashboard/account',
      body: html`<p>E-mail: <strong>${session.email}</strong> · plan: <strong>${session.plan}</strong></p>
<h2>Signed-in sessions</h2>
<table><thead><tr><th scope="col">Signed in</th><th scope="col">Last seen</th><th scope="col">Browser</th><th scope="col">Address</th><th scope="col"><span class="muted">Action</span></th></tr></thead><tbody>
${live.map(
  (
    s,
  ) => html`<tr><td>${when(s.created_at)}</td><td>${when(s.last_seen_at)}</td><td>${s.user_agent ?? '—'}</td><td>${s.ip ?? '—'}</td>
<td>${
    s.id === session.id
      ? html`<span class="muted">this session</span>`
      : html`<form method="post" action="/dashboard/account/sessions/${s.id}/revoke" class="inline">${csrfField(session)}<button type="submit" class="quiet">Sign out</button></form>`
  }</td></tr>`,
)}
</tbody></table>
<form method="post" action="/dashboard/account/sign-out-everywhere">${csrfField(session)}<button type="submit" class="danger">Sign out everywhere</button></form>`,
    })
  })

  r.signedIn('POST', '/dashboard/account/sessions/:id/revoke', async ({ request, reply, session }) => {
    const { id } = request.params as { id: string }
    await sessions.revoke(session.account_id, id)
    reply.redirect('/dashboard/account', 303)
    return undefined
  })

  r.signedIn('POST', '/dashboard/account/sign-out-everywhere', async ({ request, reply, session }) => {
    await sessions.revokeAll(session.account_id)
    clearSessionCookie(site, request, reply)
    reply.redirect('/dashboard/sign-in', 303)
    return undefined
  })
}
