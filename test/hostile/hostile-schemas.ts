import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import { declaredRoutes } from '../../src/http/pipeline.ts'
import type { InputSchemas } from '../../src/http/route-meta.ts'
import { routesFromTree } from './hostile-harness.ts'
import { type Case, json, type Route, withQuery } from './hostile-request.ts'

/**
 * The sweep's knowledge of each route, read from what the route declares (http/route.ts)
 * rather than kept here: good path values from the params schemas' `.meta({ example })`, and
 * per-field cases (a wrong type, a NUL inside) from the body and query schemas. A new field or
 * route is swept the day it is declared.
 */

type Kind = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'union' | 'other'

interface Field {
  readonly name: string
  readonly kind: Kind
  readonly example: unknown
}

const metaOf = (s: z.core.$ZodType): Record<string, unknown> | undefined =>
  z.globalRegistry.get(s as z.ZodType) as Record<string, unknown> | undefined

/** The schema under optional/default/nullable wrappers and transforms, and the first example met. */
function field(name: string, schema: z.core.$ZodType): Field {
  let cur = schema
  let example = metaOf(cur)?.example
  for (;;) {
    const def = cur._zod.def as { type: string; innerType?: z.core.$ZodType; in?: z.core.$ZodType }
    const next =
      def.type === 'pipe'
        ? def.in
        : ['optional', 'default', 'nullable'].includes(def.type)
          ? def.innerType
          : undefined
    if (!next) break
    cur = next
    example ??= metaOf(cur)?.example
  }
  const type = cur._zod.def.type
  const kind: Kind =
    type === 'string' || type === 'enum' || type === 'literal'
      ? 'string'
      : type === 'number' || type === 'boolean' || type === 'array' || type === 'union'
        ? type
        : type === 'object' || type === 'record'
          ? 'object'
          : 'other'
  return { name, kind, example }
}

function fields(schema: z.ZodType | undefined): Field[] {
  if (!(schema instanceof z.ZodObject)) return []
  return Object.entries(schema.shape as Record<string, z.core.$ZodType>).map(([name, s]) => field(name, s))
}

const WRONG: Record<Kind, unknown> = {
  string: 12345,
  number: 'x',
  boolean: 'x',
  object: 'not an object',
  array: 'not an array',
  union: { x: [1] },
  other: undefined,
}

/** A value with a NUL in the middle: the example (so the rest of the request stays valid) or "n". */
const withNul = (f: Field) => {
  const v = typeof f.example === 'string' ? f.example : 'n'
  const at = Math.ceil(v.length / 2)
  return `${v.slice(0, at)}\u0000${v.slice(at)}`
}

/** Cases made from a route's body and query schemas: every field of the wrong type; NUL in each string field. */
export function schemaCases(schema: InputSchemas): Case[] {
  const cases: Case[] = []
  const body = fields(schema.body)
  if (body.length > 0) {
    const wrong = Object.fromEntries(
      body.filter((f) => f.kind !== 'other').map((f) => [f.name, WRONG[f.kind]]),
    )
    cases.push({
      name: 'body: every field of the wrong type',
      build: (_, g) => json(g, JSON.stringify(wrong)),
    })
    const good = Object.fromEntries(
      body.filter((f) => f.example !== undefined).map((f) => [f.name, f.example]),
    )
    for (const f of body.filter((x) => x.kind === 'string')) {
      cases.push({
        name: `body: NUL in ${f.name}`,
        build: (_, g) => json(g, JSON.stringify({ ...good, [f.name]: withNul(f) })),
      })
    }
  }
  for (const f of fields(schema.query)) {
    const value = encodeURIComponent(withNul(f))
    cases.push({ name: `query: NUL in ${f.name}`, build: (_, g) => withQuery(g, `${f.name}=${value}`) })
    cases.push({ name: `query: ${f.name} twice`, build: (_, g) => withQuery(g, `${f.name}=1&${f.name}=2`) })
  }
  return cases
}

/** A path's good values, from its params schema's examples; a parameter without one stops the sweep. */
function pathExamples(method: string, url: string, schema: InputSchemas): Record<string, string> {
  const examples: Record<string, string> = {}
  const byName = new Map(fields(schema.params).map((f) => [f.name, f.example]))
  for (const [, name] of url.matchAll(/:([A-Za-z_]+)/g)) {
    const example = byName.get(name!)
    if (typeof example !== 'string')
      throw new Error(
        `${method} ${url}: path parameter :${name} has no .meta({ example }) in its params schema`,
      )
    examples[name!] = example
  }
  return examples
}

/**
 * The routes the app serves (printRoutes, HEAD excluded), each with its declaration. A printed
 * route without one fails: nothing reaches a handler without passing the gate.
 */
export function sweptRoutes(app: FastifyInstance): { routes: Route[]; undeclared: string[] } {
  const declared = new Map(declaredRoutes(app).map((d) => [`${d.method} ${d.url}`, d.meta]))
  const routes: Route[] = []
  const undeclared: string[] = []
  for (const f of routesFromTree(app.printRoutes({ commonPrefix: false }))) {
    for (const method of f.methods.filter((m) => m !== 'HEAD')) {
      const meta = declared.get(`${method} ${f.url}`)
      if (!meta) {
        undeclared.push(`${method} ${f.url}`)
        continue
      }
      routes.push({
        method,
        url: f.url,
        params: [...f.url.matchAll(/:([A-Za-z_]+)/g)].map((x) => x[1]!),
        kind: meta.access !== 'public' ? 'keyed' : f.url.startsWith('/admin/') ? 'admin' : 'public',
        examples: pathExamples(method, f.url, meta.schema),
        cases: schemaCases(meta.schema),
      })
    }
  }
  return { routes, undeclared }
}
