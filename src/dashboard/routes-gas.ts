import type { FastifyReply } from 'fastify'
import { z } from 'zod'
import type { NetworkRegistry } from '../chains/registry.ts'
import type { PolicyService, PolicyView } from '../gas/policy-service.ts'
import { type Html, html } from './html.ts'
import { csrfField, doneNotice, layout, notice, when } from './layout.ts'
import type { DashboardRoutes } from './route.ts'
import type { SessionWithAccount } from './session-store.ts'
import { field, parseForm, parseJsonField, textField } from './web.ts'

const G = '/dashboard/gas-policies'
const RULES_EXAMPLE = '{"max_gas_usd": "5", "max_spend_usd": "100"}'

const createForm = z.object({ name: textField(200), chain: textField(64), rules: textField(65_536) })
const editForm = z.object({ name: textField(200), rules: textField(65_536) })
const statusForm = z.object({ status: z.enum(['active', 'paused'], { error: 'must be active or paused' }) })

function rulesJson(text: string): unknown {
  return parseJsonField('rules', text === '' ? '{}' : text)
}

/** Gas policies (docs/gas.md): list with spend, create, edit rules, pause and resume. */
export function registerGasPages(
  r: DashboardRoutes,
  policies: PolicyService,
  networks: NetworkRegistry,
): void {
  const id = (p: unknown) => (p as { id: string }).id
  const listPage = async (session: SessionWithAccount, top?: Html) => {
    const list = await policies.list({ accountId: session.account_id }, { page: 1, limit: 100 })
    return layout({
      title: 'Gas policies',
      session,
      current: G,
      body: html`${top ?? ''}${
        list.policies.length === 0
          ? html`<p>No gas policies yet.</p>`
          : html`<table><thead><tr><th scope="col">Name</th><th scope="col">Chain</th><th scope="col">Status</th><th scope="col">Operations</th><th scope="col">Spend (USD)</th><th scope="col">Created</th></tr></thead><tbody>
${list.policies.map(
  (p) =>
    html`<tr><td><a href="${G}/${p.id}">${p.name}</a></td><td>${p.chain}</td><td><span class="status-${p.status}">${p.status}</span></td><td>${p.spend.operations}</td><td>${p.spend.total_usd}</td><td>${when(p.created_at)}</td></tr>`,
)}</tbody></table>`
      }
<h2>Create a policy</h2>
<form method="post" action="${G}" class="stack">${csrfField(session)}
<label for="gp-name">Name</label><input id="gp-name" name="name" type="text" required maxlength="200">
<label for="gp-chain">Chain</label><select id="gp-chain" name="chain">${networks
        .all()
        .filter((n) => n.kind === 'evm')
        .map((n) => html`<option value="${n.slug}">${n.slug}</option>`)}</select>
<label for="gp-rules">Rules (JSON)</label><textarea id="gp-rules" name="rules">${RULES_EXAMPLE}</textarea>
<button type="submit">Create policy</button>
</form>`,
    })
  }

  const editPage = (session: SessionWithAccount, p: PolicyView, top?: Html) =>
    layout({
      title: `Gas policy ${p.name}`,
      session,
      current: G,
      body: html`${top ?? ''}
<p>Status: <span class="status-${p.status}">${p.status}</span> · chain ${p.chain} · ${p.spend.operations} operations · spend ${p.spend.total_usd} USD (settled ${p.spend.settled_usd}, reserved ${p.spend.reserved_usd})</p>
<form method="post" action="${G}/${p.id}/status" class="inline">${csrfField(session)}<input type="hidden" name="status" value="${p.status === 'active' ? 'paused' : 'active'}"><button type="submit" class="quiet">${p.status === 'active' ? 'Pause' : 'Resume'}</button></form>
<h2>Edit</h2>
<form method="post" action="${G}/${p.id}" class="stack">${csrfField(session)}
<label for="gp-name">Name</label><input id="gp-name" name="name" type="text" required maxlength="200" value="${p.name}">
<label for="gp-rules">Rules (JSON)</label><textarea id="gp-rules" name="rules">${JSON.stringify(p.rules, null, 2)}</textarea>
<button type="submit">Save</button>
</form>`,
    })

  r.signedIn('GET', G, async ({ session }) => listPage(session))

  r.signedIn('POST', G, async ({ session, form }) => {
    const f = parseForm(createForm, {
      name: field(form, 'name'),
      chain: field(form, 'chain'),
      rules: field(form, 'rules') ?? '',
    })
    const p = await policies.create(session.account_id, {
      name: f.name,
      chain: f.chain,
      rules: rulesJson(f.rules),
    })
    return editPage(session, p, notice('ok', `Policy ${p.name} created: use policy id ${p.id}.`))
  })

  const DONE = { saved: 'Policy saved.', paused: 'Policy paused.', resumed: 'Policy resumed.' } as const
  const back = (reply: FastifyReply, policyId: string, done: keyof typeof DONE) => {
    reply.redirect(`${G}/${encodeURIComponent(policyId)}?done=${done}`, 303)
    return undefined
  }

  r.signedIn('GET', `${G}/:id`, async ({ request, session }) =>
    editPage(
      session,
      await policies.get({ accountId: session.account_id }, id(request.params)),
      doneNotice(request.query, DONE),
    ),
  )

  r.signedIn('POST', `${G}/:id`, async ({ request, reply, session, form }) => {
    const f = parseForm(editForm, { name: field(form, 'name'), rules: field(form, 'rules') ?? '' })
    await policies.update({ accountId: session.account_id }, id(request.params), {
      name: f.name,
      rules: rulesJson(f.rules),
    })
    return back(reply, id(request.params), 'saved')
  })

  r.signedIn('POST', `${G}/:id/status`, async ({ request, reply, session, form }) => {
    const { status } = parseForm(statusForm, { status: field(form, 'status') })
    await policies.update({ accountId: session.account_id }, id(request.params), { status })
    return back(reply, id(request.params), status === 'active' ? 'resumed' : 'paused')
  })
}
