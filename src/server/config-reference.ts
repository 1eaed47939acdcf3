import { z } from 'zod'
import { envSchema } from '../config/env.ts'
import { configFileSchema } from './config-schema.ts'

/**
 * docs/configuration.md, generated from the schemas `halyard serve` validates with: the config
 * file's (src/server/config-schema.ts composes the features' keys in) and the environment's
 * (src/config/env.ts). `npm run docs:config` writes it; config-reference.test.ts keeps the
 * committed file equal to what the schemas say, so a key added without its line fails CI.
 */

/** The JSON Schema subset zod emits for these schemas. */
interface Json {
  type?: string | string[]
  properties?: Record<string, Json>
  required?: string[]
  items?: Json
  additionalProperties?: Json | boolean
  propertyNames?: Json
  anyOf?: Json[]
  oneOf?: Json[]
  enum?: unknown[]
  const?: unknown
  default?: unknown
  description?: string
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  maxItems?: number
  pattern?: string
}

export interface ConfigKey {
  /** `networks[].indexer.enabled`; a union's alternative is named in `variant`. */
  path: string
  type: string
  required: boolean
  default?: string
  description?: string
  /** `source: static` for a key only one alternative of a union has. */
  variant?: string
}

const SAFE_MAX = Number.MAX_SAFE_INTEGER

function jsonSchema(schema: z.ZodType): Json {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json
}

function alternatives(s: Json): Json[] | undefined {
  return s.anyOf ?? s.oneOf
}

function typeOf(s: Json): string {
  if (s.const !== undefined) return `\`${JSON.stringify(s.const)}\``
  if (s.enum) return s.enum.map((v) => `\`${String(v)}\``).join(' or ')
  const alts = alternatives(s)
  if (alts) return alts.map(typeOf).join(' or ')
  if (Array.isArray(s.type)) return s.type.join(' or ')
  switch (s.type) {
    case 'integer':
    case 'number': {
      const min = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : undefined)
      const max = s.maximum !== undefined && s.maximum < SAFE_MAX ? s.maximum : undefined
      const range =
        min !== undefined && max !== undefined
          ? ` ${min}–${max}`
          : min !== undefined
            ? ` ≥ ${min}`
            : max !== undefined
              ? ` ≤ ${max}`
              : ''
      return `${s.type}${range}`
    }
    case 'array':
      return `list of ${s.items ? typeOf(s.items) : 'values'}${s.maxItems !== undefined ? ` (at most ${s.maxItems})` : ''}`
    case 'object':
      if (s.properties) return 'object'
      if (typeof s.additionalProperties === 'object')
        return `map of ${s.propertyNames ? typeOf(s.propertyNames) : 'string'} to ${typeOf(s.additionalProperties)}`
      return 'object'
    case undefined:
      return 'any'
    default:
      return s.type
  }
}

function walk(s: Json, path: string, required: boolean, out: ConfigKey[], variant?: string): void {
  const alts = alternatives(s)
  const objectAlts = alts?.filter((a) => a.properties)
  const row: ConfigKey = { path, type: typeOf(s), required }
  if (s.default !== undefined) row.default = JSON.stringify(s.default)
  if (s.description !== undefined) row.description = s.description
  if (variant !== undefined) row.variant = variant
  if (objectAlts && objectAlts.length > 0) {
    // A discriminated union: its alternatives' keys, each marked with the discriminator's value.
    const tags = objectAlts.map((a) => discriminator(a))
    row.type = `object, one of ${tags.map((t) => `\`${t ?? '?'}\``).join(', ')}`
    out.push(row)
    objectAlts.forEach((a, i) => {
      const tag = tags[i]
      for (const [key, child] of Object.entries(a.properties ?? {})) {
        if (child.const !== undefined) continue
        walk(child, `${path}.${key}`, (a.required ?? []).includes(key), out, tag)
      }
    })
    return
  }
  if (path !== '') out.push(row)
  if (s.properties) {
    for (const [key, child] of Object.entries(s.properties))
      walk(child, path === '' ? key : `${path}.${key}`, (s.required ?? []).includes(key), out, variant)
  } else if (s.type === 'array' && s.items?.properties) {
    for (const [key, child] of Object.entries(s.items.properties))
      walk(child, `${path}[].${key}`, (s.items.required ?? []).includes(key), out, variant)
  }
}

function discriminator(s: Json): string | undefined {
  for (const [key, child] of Object.entries(s.properties ?? {}))
    if (child.const !== undefined) return `${key}: ${String(child.const)}`
  return undefined
}

/** Every key of the config file, parents before children, in the schemas' order. */
export function configFileKeys(): ConfigKey[] {
  const out: ConfigKey[] = []
  walk(jsonSchema(configFileSchema), '', true, out)
  return out
}

/** Every environment variable `loadEnv` reads. */
export function environmentKeys(): ConfigKey[] {
  const out: ConfigKey[] = []
  walk(jsonSchema(envSchema), '', false, out)
  return out
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ')

function table(rows: ConfigKey[]): string[] {
  const lines = ['| Key | Type | Default | Description |', '| --- | --- | --- | --- |']
  for (const r of rows) {
    const def = r.default !== undefined ? `\`${r.default}\`` : r.required ? '(required)' : ''
    const desc = [r.variant ? `With \`${r.variant}\`: ` : '', r.description ?? ''].join('')
    lines.push(`| \`${r.path}\` | ${cell(r.type)} | ${cell(def)} | ${cell(desc)} |`)
  }
  return lines
}

export function renderConfigReference(): string {
  const file = configFileKeys()
  const sections = new Map<string, ConfigKey[]>()
  for (const key of file) {
    // One table per network section (`networks[].indexer`, …); the network's own keys first.
    const m = /^networks\[\]\.([^.]+)/.exec(key.path)
    const section =
      m && file.some((k) => k.path.startsWith(`networks[].${m[1]}.`)) ? `networks[].${m[1]}` : 'networks[]'
    sections.set(section, [...(sections.get(section) ?? []), key])
  }
  const lines = [
    '# Configuration reference',
    '',
    '<!-- Generated by `npm run docs:config` from the schemas Halyard validates its configuration',
    '     with (src/server/config-schema.ts, src/config/env.ts). Do not edit by hand. -->',
    '',
    'Halyard reads two things at start-up and refuses to start, naming the key, when either is',
    'wrong: a YAML config file (`halyard serve --config FILE`, or `HALYARD_CONFIG`) that lists the',
    'networks it serves, and environment variables for everything about the process itself',
    '(listen address, database, Redis, secrets, webhook delivery). An annotated example of the',
    'file is `deploy/halyard.example.yaml`; running Halyard in production is covered in',
    '[operations.md](operations.md).',
    '',
    '`(required)` marks a key that has no default and must be given. Keys are refused unless',
    'listed here.',
    '',
    '## Config file',
    '',
  ]
  for (const [section, rows] of sections) {
    lines.push(`### \`${section}\``, '', ...table(rows), '')
  }
  lines.push(
    '## Environment variables',
    '',
    'An empty variable counts as unset. Durations take a unit (`500ms`, `10s`, `1m`, `6h`).',
    '',
    ...table(environmentKeys()),
    '',
  )
  return lines.join('\n')
}
