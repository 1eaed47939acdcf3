import type { JsonSchema } from './document.ts'

/**
 * What a reader of the OpenAPI document would find unexplained: each parameter without a
 * description or an example, and each field of a body (request or response) or a component
 * schema without a description, or, when its values are scalars, without an example. A client
 * author reads response examples as much as request ones: they show the format of an amount, a
 * hash or a timestamp before a call is made. The document's own test fails naming every one, so
 * a field added without words is caught where it is declared.
 */
export interface Audit {
  /** `where: what is missing`, one line each. */
  missing: string[]
  parameters: { total: number; described: number; withExample: number }
  fields: { total: number; described: number; withExample: number }
  /** The fields of response bodies alone (component schemas are counted once, under `fields`). */
  responseFields: { total: number; withExample: number }
  /** Every example a parameter or field declares, with the schema it must validate against. */
  examples: { at: string; schema: JsonSchema; example: unknown }[]
}

type Op = {
  parameters?: { name: string; in: string; description?: string; example?: unknown; schema: JsonSchema }[]
  requestBody?: { content: Record<string, { schema: JsonSchema }> }
  responses: Record<string, { $ref?: string; content?: Record<string, { schema: JsonSchema }> }>
}

const hasExample = (s: JsonSchema): boolean =>
  s.example !== undefined || (Array.isArray(s.examples) && s.examples.length > 0) || s.const !== undefined

const SCALARS = new Set(['string', 'number', 'integer', 'boolean'])

/** A schema whose values are a scalar (an enum or const counts: its values are its examples). */
function isScalar(s: JsonSchema): boolean {
  const types = Array.isArray(s.type) ? s.type : [s.type]
  return (
    types.some((t) => typeof t === 'string' && SCALARS.has(t)) &&
    !types.includes('object') &&
    !types.includes('array')
  )
}

const refName = (s: JsonSchema): string | undefined =>
  typeof s.$ref === 'string' ? s.$ref.replace('#/components/schemas/', '') : undefined

export function auditOpenApi(doc: {
  paths: Record<string, Record<string, Op>>
  components: { schemas: Record<string, JsonSchema> }
}): Audit {
  const a: Audit = {
    missing: [],
    parameters: { total: 0, described: 0, withExample: 0 },
    fields: { total: 0, described: 0, withExample: 0 },
    responseFields: { total: 0, withExample: 0 },
    examples: [],
  }
  const components = doc.components.schemas
  const branches = (s: JsonSchema): JsonSchema[] | undefined =>
    (['oneOf', 'anyOf'] as const).map((k) => s[k]).find(Array.isArray) as JsonSchema[] | undefined
  const isNull = (s: JsonSchema): boolean => s.type === 'null'
  /** Its values are scalars: directly, through a component, or a union of scalars (and null). */
  const scalarish = (s: JsonSchema, depth = 0): boolean => {
    if (depth > 8) return false
    const ref = refName(s)
    if (ref !== undefined) return components[ref] !== undefined && scalarish(components[ref], depth + 1)
    const bs = branches(s)
    if (bs) return bs.some((b) => !isNull(b)) && bs.every((b) => isNull(b) || scalarish(b, depth + 1))
    return isScalar(s)
  }
  /** It shows a value: its own example, an enum or const, or one on every branch it points to. */
  const exampled = (s: JsonSchema, depth = 0): boolean => {
    if (hasExample(s) || Array.isArray(s.enum)) return true
    if (depth > 8) return false
    const ref = refName(s)
    if (ref !== undefined) return components[ref] !== undefined && exampled(components[ref], depth + 1)
    if (typeof s.items === 'object' && scalarish(s.items as JsonSchema))
      return exampled(s.items as JsonSchema, depth + 1)
    const bs = branches(s)
    return bs?.every((b) => isNull(b) || exampled(b, depth + 1)) === true
  }
  /** A list of scalars (log topics, chain names): its items show the format. */
  const scalarItems = (s: JsonSchema): boolean =>
    typeof s.items === 'object' && scalarish(s.items as JsonSchema)
  /** Every property of every object inside `s`, through arrays and unions. */
  const walk = (s: unknown, where: string, response: boolean): void => {
    if (typeof s !== 'object' || s === null) return
    const o = s as JsonSchema
    for (const k of ['oneOf', 'anyOf', 'allOf'] as const)
      if (Array.isArray(o[k])) for (const x of o[k] as unknown[]) walk(x, where, response)
    if (o.items) walk(o.items, `${where}[]`, response)
    if (typeof o.additionalProperties === 'object') walk(o.additionalProperties, `${where}{}`, response)
    const props = o.properties as Record<string, JsonSchema> | undefined
    for (const [name, p] of Object.entries(props ?? {})) {
      const at = `${where}.${name}`
      a.fields.total++
      if (p.example !== undefined) a.examples.push({ at, schema: p, example: p.example })
      if (typeof p.description === 'string' && p.description.trim() !== '') a.fields.described++
      else a.missing.push(`${at}: no description`)
      if (response) a.responseFields.total++
      if (exampled(p)) {
        a.fields.withExample++
        if (response) a.responseFields.withExample++
      } else if (scalarish(p) || scalarItems(p)) a.missing.push(`${at}: no example`)
      walk(p, at, response)
    }
  }
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const where = `${method.toUpperCase()} ${path}`
      for (const p of op.parameters ?? []) {
        a.parameters.total++
        const at = `${where} ${p.in} ${p.name}`
        if (p.description?.trim()) a.parameters.described++
        else a.missing.push(`${at}: no description`)
        const example = p.example ?? p.schema.example
        if (example !== undefined) a.examples.push({ at, schema: p.schema, example })
        if (p.example !== undefined || hasExample(p.schema)) a.parameters.withExample++
        else a.missing.push(`${at}: no example`)
      }
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {}))
        walk(media.schema, `${where} request ${type}`, false)
      for (const [status, r] of Object.entries(op.responses))
        for (const [type, media] of Object.entries(r.content ?? {}))
          walk(media.schema, `${where} ${status} ${type}`, true)
    }
  }
  for (const [name, s] of Object.entries(doc.components.schemas))
    walk(s, `#/components/schemas/${name}`, false)
  return a
}
