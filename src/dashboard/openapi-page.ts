import { z } from 'zod'
import { type Html, html } from './html.ts'

/**
 * The OpenAPI document as a readable page: per operation its summary and description, scope and
 * compute units, the parameters and request body fields (type, required, description, example),
 * and every answer — the success body's fields and each error with the error body it carries.
 * Read from the same document `GET /v1/openapi.json` serves, so the page shows what it says.
 */

type Schema = Record<string, unknown>

const operation = z
  .object({
    summary: z.string().optional(),
    description: z.string().optional(),
    parameters: z
      .array(
        z
          .object({
            name: z.string(),
            in: z.string(),
            required: z.boolean().optional(),
            description: z.string().optional(),
            schema: z.record(z.string(), z.unknown()).optional(),
            example: z.unknown().optional(),
          })
          .loose(),
      )
      .optional(),
    responses: z.record(z.string(), z.unknown()).optional(),
    requestBody: z.unknown().optional(),
    'x-halyard-scope': z.unknown().optional(),
    'x-halyard-compute-units': z.unknown().optional(),
  })
  .loose()
type Operation = z.infer<typeof operation>

const doc = z
  .object({
    info: z.object({ title: z.string().optional(), version: z.string().optional() }).loose().optional(),
    paths: z.record(z.string(), z.record(z.string(), z.unknown())),
    components: z.record(z.string(), z.unknown()).optional(),
  })
  .loose()
type Doc = z.infer<typeof doc>

const METHODS = ['get', 'post', 'put', 'patch', 'delete']
const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Follows a local `$ref` (`#/components/…`) once or more; anything else is returned as is. */
function deref(d: Doc, v: unknown, depth = 0): Schema | undefined {
  if (!isSchema(v)) return undefined
  const ref = v.$ref
  if (typeof ref !== 'string' || depth > 8) return v
  let node: unknown = d
  for (const part of ref.replace(/^#\//, '').split('/')) node = isSchema(node) ? node[part] : undefined
  return deref(d, node, depth + 1)
}

function refName(v: unknown): string | undefined {
  return isSchema(v) && typeof v.$ref === 'string' ? v.$ref.split('/').pop() : undefined
}

/** A short type: `string`, `integer ≥ 1`, `array of string`, `"A" | "B"`, `Webhook`. */
function typeOf(d: Doc, raw: unknown, depth = 0): string {
  const named = refName(raw)
  const s = deref(d, raw)
  if (!s) return 'any'
  if (depth > 3) return named ?? 'object'
  if (Array.isArray(s.enum)) return s.enum.map((e) => JSON.stringify(e)).join(' | ')
  if (s.const !== undefined) return JSON.stringify(s.const)
  const alts = (s.anyOf ?? s.oneOf) as unknown
  if (Array.isArray(alts)) return [...new Set(alts.map((a) => typeOf(d, a, depth + 1)))].join(' or ')
  const t = Array.isArray(s.type)
    ? s.type.join(' or ')
    : typeof s.type === 'string'
      ? s.type
      : (named ?? 'object')
  if (t === 'array') return `array of ${typeOf(d, s.items, depth + 1)}`
  const bounds = [
    typeof s.minimum === 'number' ? `≥ ${s.minimum}` : '',
    typeof s.maximum === 'number' ? `≤ ${s.maximum}` : '',
    typeof s.format === 'string' ? s.format : '',
  ].filter(Boolean)
  return bounds.length ? `${t} (${bounds.join(', ')})` : named && t === 'object' ? named : t
}

function exampleOf(s: Schema | undefined, extra?: unknown): string {
  const ex = extra ?? (Array.isArray(s?.examples) ? s.examples[0] : s?.example)
  if (ex === undefined) return ''
  const text = typeof ex === 'string' ? ex : JSON.stringify(ex)
  return text.length > 120 ? `${text.slice(0, 117)}…` : text
}

interface Field {
  name: string
  type: string
  required: boolean
  description: string
  example: string
}

/** The fields of an object schema, nested objects one level down as `parent.child`. */
function fieldsOf(d: Doc, raw: unknown, prefix = '', depth = 0): Field[] {
  const s = deref(d, raw)
  if (!s) return []
  const alts = (s.anyOf ?? s.oneOf ?? s.allOf) as unknown
  if (!isSchema(s.properties) && Array.isArray(alts))
    return alts.flatMap((a) => fieldsOf(d, a, prefix, depth))
  if (!isSchema(s.properties)) return []
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : [])
  return Object.entries(s.properties).flatMap(([name, prop]) => {
    const p = deref(d, prop)
    const field: Field = {
      name: prefix + name,
      type: typeOf(d, prop),
      required: required.has(name),
      description: typeof p?.description === 'string' ? p.description : '',
      example: exampleOf(p),
    }
    const nested = depth < 1 && isSchema(p?.properties) ? fieldsOf(d, p, `${prefix}${name}.`, depth + 1) : []
    return [field, ...nested]
  })
}

function fieldTable(fields: Field[]): Html | string {
  if (fields.length === 0) return ''
  return html`<table class="fields"><thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Required</th><th scope="col">Description</th><th scope="col">Example</th></tr></thead><tbody>
${fields.map(
  (f) =>
    html`<tr><td><code>${f.name}</code></td><td>${f.type}</td><td>${f.required ? 'yes' : 'no'}</td><td>${f.description}</td><td>${f.example ? html`<code>${f.example}</code>` : ''}</td></tr>`,
)}</tbody></table>`
}

function jsonContent(d: Doc, holder: unknown): { schema?: unknown; example?: unknown } {
  const h = deref(d, holder)
  const content = isSchema(h?.content) ? h.content : undefined
  const json = isSchema(content?.['application/json']) ? (content['application/json'] as Schema) : undefined
  return { schema: json?.schema, example: json?.example }
}

function requestBody(d: Doc, o: Operation): Html | string {
  if (o.requestBody === undefined) return ''
  const { schema, example } = jsonContent(d, o.requestBody)
  const s = deref(d, schema)
  const ex = exampleOf(s, example)
  return html`<h4>Request body (JSON)</h4>${fieldTable(fieldsOf(d, schema)) || html`<p>${typeOf(d, schema)}</p>`}${ex ? html`<p>Example: <code>${ex}</code></p>` : ''}`
}

function parameters(d: Doc, o: Operation): Html | string {
  if (!o.parameters?.length) return ''
  const fields = o.parameters.map((p) => ({
    name: `${p.name} (${p.in})`,
    type: typeOf(d, p.schema),
    required: p.required === true,
    description: p.description ?? (typeof p.schema?.description === 'string' ? p.schema.description : ''),
    example: exampleOf(p.schema, p.example),
  }))
  return html`<h4>Parameters</h4>${fieldTable(fields)}`
}

function responses(d: Doc, o: Operation): Html {
  const entries = Object.entries(o.responses ?? {}).sort(([a], [b]) => a.localeCompare(b))
  return html`<h4>Responses</h4><dl>${entries.map(([status, raw]) => {
    const r = deref(d, raw)
    const code = refName(raw)
    const description = typeof r?.description === 'string' ? r.description : ''
    const { schema } = jsonContent(d, raw)
    const error = code !== undefined && Number(status) >= 400
    const body = error
      ? html`<p>Body: <code>${JSON.stringify({ error: { code, message: '…', status: Number(status) } })}</code></p>`
      : fieldTable(fieldsOf(d, schema))
    return html`<dt><code>${status}</code></dt><dd>${description}${body}</dd>`
  })}</dl>`
}

function operationSection(d: Doc, method: string, path: string, raw: unknown): Html {
  const op = operation.safeParse(raw)
  const o: Operation = op.success ? op.data : {}
  const scope = o['x-halyard-scope']
  const cu = o['x-halyard-compute-units']
  return html`<details><summary><code>${method.toUpperCase()} ${path}</code> ${o.summary ?? ''}</summary>
${o.description ? html`<p>${o.description}</p>` : ''}
<p>Scope: ${scope === undefined ? 'none (no key)' : JSON.stringify(scope)} · compute units: ${cu === undefined ? '—' : JSON.stringify(cu)}</p>
${parameters(d, o)}${requestBody(d, o)}${responses(d, o)}
</details>`
}

/** The OpenAPI document as a readable page: every path and method, its fields and answers. */
export function renderOpenApi(raw: unknown): Html {
  const parsed = doc.safeParse(raw)
  if (!parsed.success) return html`<p>The OpenAPI document could not be read.</p>`
  const d = parsed.data
  const entries = Object.entries(d.paths).sort(([a], [b]) => a.localeCompare(b))
  return html`<p>${d.info?.title ?? 'Halyard API'} ${d.info?.version ?? ''} · the raw document: <a href="/v1/openapi.json">/v1/openapi.json</a></p>
${entries.map(([path, item]) =>
  METHODS.filter((m) => item[m] !== undefined).map((m) => operationSection(d, m, path, item[m])),
)}`
}
