import type { JsonSchema } from './document.ts'

/**
 * What a reader of the OpenAPI document would find unexplained: each parameter without a
 * description or an example, each field of a body (or a component schema) without a
 * description, and each scalar field of a request without an example. The document's own test
 * fails naming every one, so a field added without words is caught where it is declared.
 */
export interface Audit {
  /** `where: what is missing`, one line each. */
  missing: string[]
  parameters: { total: number; described: number; withExample: number }
  fields: { total: number; described: number; withExample: number }
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

export function auditOpenApi(doc: {
  paths: Record<string, Record<string, Op>>
  components: { schemas: Record<string, JsonSchema> }
}): Audit {
  const a: Audit = {
    missing: [],
    parameters: { total: 0, described: 0, withExample: 0 },
    fields: { total: 0, described: 0, withExample: 0 },
  }
  /** Every property of every object inside `s`, through arrays and unions. */
  const walk = (s: unknown, where: string, needExample: boolean): void => {
    if (typeof s !== 'object' || s === null) return
    const o = s as JsonSchema
    for (const k of ['oneOf', 'anyOf', 'allOf'] as const)
      if (Array.isArray(o[k])) for (const x of o[k] as unknown[]) walk(x, where, needExample)
    if (o.items) walk(o.items, `${where}[]`, needExample)
    if (typeof o.additionalProperties === 'object') walk(o.additionalProperties, `${where}{}`, needExample)
    const props = o.properties as Record<string, JsonSchema> | undefined
    for (const [name, p] of Object.entries(props ?? {})) {
      const at = `${where}.${name}`
      a.fields.total++
      if (typeof p.description === 'string' && p.description.trim() !== '') a.fields.described++
      else a.missing.push(`${at}: no description`)
      if (hasExample(p) || (p.enum !== undefined && Array.isArray(p.enum))) a.fields.withExample++
      else if (needExample && isScalar(p)) a.missing.push(`${at}: no example`)
      walk(p, at, needExample)
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
        if (p.example !== undefined || hasExample(p.schema)) a.parameters.withExample++
        else a.missing.push(`${at}: no example`)
      }
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {}))
        walk(media.schema, `${where} request ${type}`, true)
      for (const [status, r] of Object.entries(op.responses))
        for (const [type, media] of Object.entries(r.content ?? {}))
          walk(media.schema, `${where} ${status} ${type}`, false)
    }
  }
  for (const [name, s] of Object.entries(doc.components.schemas))
    walk(s, `#/components/schemas/${name}`, true)
  return a
}
