import { z } from 'zod'
import { type Html, html } from './html.ts'

const operation = z
  .object({
    summary: z.string().optional(),
    description: z.string().optional(),
    tags: z.array(z.string()).optional(),
    parameters: z
      .array(z.object({ name: z.string(), in: z.string(), required: z.boolean().optional() }).loose())
      .optional(),
    responses: z.record(z.string(), z.unknown()).optional(),
    security: z.array(z.record(z.string(), z.unknown())).optional(),
    requestBody: z.unknown().optional(),
    'x-halyard-scope': z.unknown().optional(),
    'x-halyard-compute-units': z.unknown().optional(),
  })
  .loose()
const doc = z
  .object({
    info: z.object({ title: z.string().optional(), version: z.string().optional() }).loose().optional(),
    paths: z.record(z.string(), z.record(z.string(), z.unknown())),
  })
  .loose()

const METHODS = ['get', 'post', 'put', 'patch', 'delete']

/** The OpenAPI document as a readable page: every path and method, its parameters and answers. */
export function renderOpenApi(raw: unknown): Html {
  const parsed = doc.safeParse(raw)
  if (!parsed.success) return html`<p>The OpenAPI document could not be read.</p>`
  const d = parsed.data
  const entries = Object.entries(d.paths).sort(([a], [b]) => a.localeCompare(b))
  return html`<p>${d.info?.title ?? 'Halyard API'} ${d.info?.version ?? ''} · the raw document: <a href="/v1/openapi.json">/v1/openapi.json</a></p>
${entries.map(([path, item]) =>
  METHODS.filter((m) => item[m] !== undefined).map((m) => {
    const op = operation.safeParse(item[m])
    const o = op.success ? op.data : {}
    return html`<details><summary><code>${m.toUpperCase()} ${path}</code> ${o.summary ?? ''}</summary>
${o.description ? html`<p>${o.description}</p>` : ''}
${
  o.parameters?.length
    ? html`<p>Parameters: ${o.parameters.map((p, i) => html`${i ? ', ' : ''}<code>${p.name}</code> (${p.in}${p.required ? ', required' : ''})`)}</p>`
    : ''
}
<p>Scope: ${o['x-halyard-scope'] === undefined ? 'none (no key)' : JSON.stringify(o['x-halyard-scope'])} · compute units: ${o['x-halyard-compute-units'] === undefined ? '—' : JSON.stringify(o['x-halyard-compute-units'])}${o.requestBody === undefined ? '' : ' · takes a JSON body'}</p>
<p>Responses: ${Object.keys(o.responses ?? {}).join(', ') || '—'}</p>
</details>`
  }),
)}`
}
