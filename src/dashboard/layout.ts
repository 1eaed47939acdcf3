import { type Html, html } from './html.ts'
import type { SessionWithAccount } from './session-store.ts'

const NAV = [
  ['/dashboard', 'Overview'],
  ['/dashboard/settings/api-keys', 'API Keys'],
  ['/dashboard/requests', 'Requests'],
  ['/dashboard/webhooks', 'Webhooks'],
  ['/dashboard/gas-policies', 'Gas policies'],
  ['/dashboard/wallets', 'Smart wallets'],
  ['/dashboard/docs', 'API docs'],
  ['/dashboard/account', 'Account'],
] as const

export interface PageOptions {
  title: string
  /** Signed-in pages show the navigation and the sign-out button. */
  session?: SessionWithAccount | undefined
  /** The nav entry to mark as current. */
  current?: string
  body: Html
}

/** The document every page shares: one CSS and one JS file, both served by Halyard. */
export function layout(o: PageOptions): Html {
  const s = o.session
  return html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · Halyard</title>
<link rel="stylesheet" href="/dashboard/assets/dashboard.css">
<script src="/dashboard/assets/dashboard.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<span class="brand">Halyard</span>
${
  s
    ? html`<nav aria-label="Dashboard"><ul>${NAV.map(
        ([href, label]) =>
          html`<li><a href="${href}"${o.current === href ? html` aria-current="page"` : ''}>${label}</a></li>`,
      )}</ul></nav>
<form method="post" action="/dashboard/sign-out" class="signout">${csrfField(s)}<span class="who">${s.email}</span> <button type="submit">Sign out</button></form>`
    : ''
}
</header>
<main id="main">
<h1>${o.title}</h1>
${o.body}
</main>
</body>
</html>`
}

export function csrfField(s: SessionWithAccount): Html {
  return html`<input type="hidden" name="_csrf" value="${s.csrf_token}">`
}

/** A notice at the top of a page (role=alert for errors so screen readers announce it). */
export function notice(kind: 'error' | 'ok', message: string): Html {
  return kind === 'error'
    ? html`<p class="notice error" role="alert">${message}</p>`
    : html`<p class="notice ok" role="status">${message}</p>`
}

/**
 * The notice after a redirect (POST, then 303 to a page: reloading never repeats the action).
 * `?done=` names one of the page's fixed messages; nothing from the URL is shown.
 */
export function doneNotice(query: unknown, messages: Readonly<Record<string, string>>): Html | undefined {
  const done = (query as Record<string, unknown> | undefined)?.done
  const message = typeof done === 'string' && Object.hasOwn(messages, done) ? messages[done] : undefined
  return message === undefined ? undefined : notice('ok', message)
}

export function when(d: Date | string | null | undefined): Html {
  if (!d) return html`<span class="muted">—</span>`
  const iso = typeof d === 'string' ? d : d.toISOString()
  return html`<time datetime="${iso}">${iso.slice(0, 19).replace('T', ' ')} UTC</time>`
}
