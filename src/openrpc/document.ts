import { z } from 'zod'
import type { Network } from '../chains/registry.ts'
import type { ChainKind } from '../http/route-meta.ts'
import {
  RPC_FORBIDDEN,
  RPC_INTERNAL_ERROR,
  RPC_INVALID_PARAMS,
  RPC_LIMIT_EXCEEDED,
  RPC_METHOD_NOT_FOUND,
} from '../jsonrpc.ts'
import { type JsonSchema, jsonSchema } from '../openapi/document.ts'
import { registries } from '../rpc/methods/registry.ts'
import type { MethodRegistry, MethodSpec } from '../rpc/methods/spec.ts'
import type { JsonRpcSurface } from '../rpc/surfaces.ts'

/**
 * The OpenRPC document of every JSON-RPC surface the server declares (rpc/surfaces.ts): the
 * methods are the registries' rows (and the names their families are known to serve), each with
 * the surfaces that serve it and, per surface, the scope a key needs and the compute units it
 * costs. Nothing here lists a method: a row added to a registry is documented the day it exists.
 */

/** One surface over one registry: /v1/rpc is one per chain kind. */
interface Served {
  readonly name: string
  readonly path: string
  readonly kind: ChainKind
  readonly surface: JsonRpcSurface
  readonly registry: MethodRegistry
}

/** `/v1/rpc/:chain/:network` → `/v1/rpc/{chain}/{network}`. */
const template = (url: string) => url.replace(/:([A-Za-z_]+)/g, '{$1}')

function surfaceName(url: string): string {
  const parts = url.split('/').filter(Boolean)
  return parts[0] === 'v1' ? (parts[1] ?? 'v1') : (parts[0] ?? 'root')
}

function served(surfaces: readonly JsonRpcSurface[]): Served[] {
  const out: Served[] = []
  for (const s of surfaces) {
    const name = surfaceName(s.url)
    const path = template(s.url)
    if (s.registry) out.push({ name, path, kind: s.kinds?.[0] ?? 'evm', surface: s, registry: s.registry })
    else
      for (const kind of s.kinds ?? (Object.keys(registries) as ChainKind[]))
        out.push({ name: `${name}-${kind}`, path, kind, surface: s, registry: registries[kind] })
  }
  return out
}

/** Where the method's own definition lives, by surface. */
function externalDocs(s: Served, method: string): { url: string; description: string } | undefined {
  if (method.startsWith('alchemy_') || method.startsWith('rundler_')) return undefined
  if (s.name === 'bundler' || method.endsWith('UserOperation') || method.startsWith('eth_supportedEntry'))
    return {
      url: 'https://eips.ethereum.org/EIPS/eip-7769',
      description: 'ERC-7769: JSON-RPC API for ERC-4337',
    }
  if (method.startsWith('pm_'))
    return {
      url: 'https://eips.ethereum.org/EIPS/eip-7677',
      description: 'ERC-7677: Paymaster Web Service Capability',
    }
  if (s.kind === 'solana') return { url: 'https://solana.com/docs/rpc', description: 'Solana JSON-RPC' }
  return {
    url: 'https://ethereum.github.io/execution-apis/',
    description: 'Ethereum execution APIs (debug_, trace_ and devnet methods: the node software)',
  }
}

const GATES: Record<NonNullable<MethodSpec['gate']>, string> = {
  debug: "only where the network's config sets debugMethods: true",
  devnet: 'devnets only',
  'devnet-destructive': "devnets only, where the network's config sets devMethods.destructive: true",
}

/** What one surface says about one method. */
function surfaceFacts(s: Served, spec: MethodSpec): Record<string, unknown> {
  const facts: Record<string, unknown> = {
    surface: s.name,
    path: s.path,
    chainKind: s.kind,
    access: spec.access,
    scope: spec.scope,
    computeUnits: spec.cost([]),
  }
  if (spec.cost.pastBlock !== undefined) facts.computeUnitsPastBlock = spec.cost.pastBlock
  if (spec.cost.note !== undefined) facts.computeUnitsNote = spec.cost.note
  if (spec.gate) facts.servedWhere = GATES[spec.gate]
  if (spec.access === 'operator') facts.servedWhere = "the operator's key only"
  if (spec.ws) facts.websocketOnly = true
  return facts
}

function sentence(s: Served, spec: MethodSpec): string {
  const cu = spec.cost.note ?? `${spec.cost([])} CU`
  const where = spec.gate ? `; ${GATES[spec.gate]}` : ''
  const ws = spec.ws ? '; over WebSocket only' : ''
  return `On \`${s.path}\` (${s.kind}): a ${spec.access} needing the \`${spec.scope}\` scope; ${cu}${where}${ws}.`
}

/** The params tuple as positional content descriptors (its items' descriptions name them). */
function paramsOf(spec: MethodSpec): Record<string, unknown>[] | undefined {
  const schema = spec.params
  if (!(schema instanceof z.ZodTuple)) return undefined
  return (schema.def.items as z.ZodType[]).map((item, i) => {
    const s = jsonSchema(item, 'input')
    return {
      name: typeof s.title === 'string' ? s.title : `param${i + 1}`,
      required: item._zod.optin !== 'optional',
      schema: s,
    }
  })
}

const ERRORS = {
  MethodNotFound: {
    code: RPC_METHOD_NOT_FOUND,
    message: 'The method does not exist, or is not served on this network (the message says why)',
  },
  InvalidParams: {
    code: RPC_INVALID_PARAMS,
    message: 'The params are malformed (the message names the field)',
  },
  Forbidden: {
    code: RPC_FORBIDDEN,
    message:
      "The key's scopes or allowed-methods list do not allow the call (inside a batch or over WebSocket)",
  },
  LimitExceeded: {
    code: RPC_LIMIT_EXCEEDED,
    message: 'A limit was exceeded (range, result size, rate: data.retryAfter says when to retry)',
  },
  Internal: { code: RPC_INTERNAL_ERROR, message: 'Server error; retry with exponential backoff' },
}
const errorRefs = Object.keys(ERRORS).map((k) => ({ $ref: `#/components/errors/${k}` }))

function distinct<T>(values: readonly T[]): T | T[] {
  const set = [...new Set(values)]
  return set.length === 1 ? set[0]! : set
}

function methodObject(name: string, uses: readonly [Served, MethodSpec][], servers: Map<string, unknown>) {
  const [first, firstSpec] = uses[0]!
  const params = paramsOf(firstSpec)
  const docs = externalDocs(first, name)
  const method: Record<string, unknown> = {
    name,
    summary: `A ${firstSpec.access} (${firstSpec.scope}, ${firstSpec.cost([])} CU) on ${[...new Set(uses.map(([s]) => s.name))].join(', ')}`,
    description: uses.map(([s, spec]) => sentence(s, spec)).join('\n\n'),
    tags: [...new Set([...uses.map(([s]) => s.name), ...uses.map(([, spec]) => `scope:${spec.scope}`)])].map(
      (t) => ({ name: t }),
    ),
    // Name and URL only: the full server objects are the document's `servers`.
    servers: [...new Set(uses.map(([s]) => s.name))].map((n) => {
      const { name: sn, url } = servers.get(n) as { name: string; url: string }
      return { name: sn, url }
    }),
    paramStructure: 'by-position',
    params: params ?? [],
    result: { name: 'result', schema: {} },
    errors: errorRefs,
    'x-halyard-scope': distinct(uses.map(([, spec]) => spec.scope)),
    'x-halyard-compute-units': distinct(uses.map(([, spec]) => spec.cost([]))),
    'x-halyard-surfaces': uses.map(([s, spec]) => surfaceFacts(s, spec)),
  }
  // Without a params schema the params go upstream as given: the method's definition (externalDocs) has them.
  if (!params) method['x-halyard-params-forwarded'] = true
  if (docs) method.externalDocs = { url: docs.url }
  return method
}

/** An absolute URL for a surface: its path with the first network of its kind (the template is `x-halyard-path`). */
function serverObject(s: Served, origin: string, networks: readonly Network[]): Record<string, unknown> {
  const net = networks.find((n) => n.kind === s.kind)
  const chain = net?.chain ?? (s.kind === 'solana' ? 'solana' : 'ethereum')
  const url = s.surface.url
    .replace(':chain', chain)
    .replace(':network', s.surface.keyInPath ? (net?.slug ?? chain) : (net?.network ?? 'mainnet'))
    .replace(/:([A-Za-z_]+)/g, (_, p: string) => (p.toLowerCase().includes('key') ? 'YOUR_API_KEY' : p))
  return {
    name: s.name,
    url: `${origin}${url}`,
    summary: `${s.surface.what} (${s.kind})`,
    description: `Any network of kind ${s.kind}: \`${s.path}\`. The key goes in ${s.surface.keyInPath ? 'the path' : 'an `X-API-Key` or `Authorization: Bearer` header'}.`,
    'x-halyard-path': s.path,
  }
}

export interface OpenRpcInput {
  readonly surfaces: readonly JsonRpcSurface[]
  readonly networks: readonly Network[]
  /** Where users reach the server (`https://halyard.example.com`). */
  readonly origin: string
}

/** The OpenRPC 1.3 document of these surfaces. */
export function buildOpenRpc(input: OpenRpcInput): JsonSchema {
  const list = served(input.surfaces)
  const servers = new Map(list.map((s) => [s.name, serverObject(s, input.origin, input.networks)]))
  const uses = new Map<string, [Served, MethodSpec][]>()
  const refused: Record<string, unknown>[] = []
  const families: Record<string, unknown>[] = []
  const add = (s: Served, spec: MethodSpec) => {
    if (spec.refusal !== undefined) {
      refused.push({ name: spec.name, surface: s.name, reason: spec.refusal })
      return
    }
    const entry = uses.get(spec.name) ?? []
    if (!entry.some(([u]) => u.name === s.name)) entry.push([s, spec])
    uses.set(spec.name, entry)
  }
  for (const s of list) {
    for (const spec of s.registry.specs()) add(s, spec)
    for (const f of s.registry.families()) {
      families.push({ surface: s.name, pattern: f.pattern.source, ...(f.what ? { what: f.what } : {}) })
      for (const name of f.known ?? []) {
        const spec = s.registry.describe(name)
        if (spec) add(s, spec)
      }
    }
  }
  const methods = [...uses.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, u]) => methodObject(name, u, servers))
  return {
    openrpc: '1.3.2',
    info: {
      title: 'Halyard JSON-RPC',
      version: 'v1',
      description:
        'Every JSON-RPC surface of this server: /v1/rpc (EVM and Solana), /v1/bundler (ERC-4337), /v1/paymaster (ERC-7677) and the Alchemy-compatible root, generated from the method registries. Each method lists, per surface, the key scope it needs and its compute units (x-halyard-surfaces). Requests may be batched (a JSON array). Names outside the rows are matched by the families in x-halyard-method-families; refused names are in x-halyard-refused-methods.',
    },
    servers: [...servers.values()],
    methods,
    components: { errors: ERRORS },
    'x-halyard-method-families': families,
    'x-halyard-refused-methods': refused,
  }
}
