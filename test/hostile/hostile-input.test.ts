import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AnvilProcess, startAnvil } from '../../src/devnet/anvil.ts'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../helpers/halyard.ts'
import { storageBackends, type TestStorage } from '../helpers/storage.ts'
import { CASES, pathCases, registered } from './hostile-cases.ts'
import { GROUPS, routesFromTree, send, sendRaw, violation } from './hostile-harness.ts'
import { ADMIN_TOKEN, fillPath, type Req, type Route } from './hostile-request.ts'
import { sweptRoutes } from './hostile-schemas.ts'

/**
 * The project's non-negotiable: every endpoint answers malformed, missing, oversized and hostile
 * input with the JSON error body (`{"error":{code,message,status}}`) and a message naming the
 * problem — never a 500, never a hang.
 *
 * Routes come from the running app (printRoutes) with what each declares (defineRoute), not from
 * a list kept here: a new route is swept the day it is registered. Each route gets the battery
 * below (auth, body, query, path, method, and for JSON-RPC garbage batches) plus cases made from
 * its declared schemas (hostile-schemas.ts: each field of the wrong type, NUL in each string
 * field; good path values from the params schemas' examples); every answer must be < 500, and every 4xx must carry the
 * error body whose `status` equals the HTTP status. A request unanswered within HANG_MS fails
 * the test as a hang (a hang detector, not a speed assertion). HEAD (Fastify's automatic twin of
 * GET) is not swept: it has no body to check.
 */

describe('hostile input on every route (PGlite)', () => {
  let anvil: AnvilProcess
  let storage: TestStorage
  let h: TestHalyard
  let key: string
  /** A test key of another account: its requests on object routes run the environment filter. */
  let testKey: string
  let origin: URL
  let routes: Route[] = []
  let undeclared: string[] = []

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await storageBackends()[0]!.open()
    h = await startTestHalyard({
      networks: [anvilNetwork(anvil)],
      storage,
      extra: { adminToken: ADMIN_TOKEN },
    })
    key = await h.createKey({ env: 'live' }) // no scopes given: all of them
    testKey = await h.createKey({ env: 'test' })
    origin = new URL(h.halyard.origin)
    registered.clear()
    for (const f of routesFromTree(h.halyard.app.printRoutes({ commonPrefix: false })))
      registered.set(f.url, new Set(f.methods))
    ;({ routes, undeclared } = sweptRoutes(h.halyard.app))
    // The Alchemy-compatible root carries the key, and an Alchemy network name, in its path.
    for (const r of routes.filter((x) => x.params.includes('apiKey')))
      Object.assign(r.examples, { apiKey: key, network: 'eth-devnet' })
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  const goodRequest = (r: Route, apiKey = key): Req => ({
    method: r.method,
    path: fillPath(r),
    headers:
      r.kind === 'admin'
        ? { authorization: `Bearer ${ADMIN_TOKEN}` }
        : r.kind === 'keyed'
          ? { 'x-api-key': apiKey }
          : {},
  })

  /** Every case of the battery on `mine`, three at a time; the failures, each saying where. */
  const sweep = async (group: string, mine: Route[], apiKey = key) => {
    const jobs = mine.flatMap((r) =>
      [...CASES, ...r.cases, ...pathCases(r)].filter((c) => c.when?.(r) ?? true).map((c) => ({ r, c })),
    )
    const failures: string[] = []
    let next = 0
    const worker = async () => {
      while (next < jobs.length) {
        const { r, c } = jobs[next++]!
        const req = c.build(r, goodRequest(r, apiKey))
        const where = `${r.method} ${r.url} [${c.name}] -> ${req.method} ${req.path.slice(0, 120)}`
        try {
          const ans = await send(origin, req)
          const bad = violation(ans, c.mention?.(r))
          if (bad) failures.push(`${where}\n    ${bad}; HTTP ${ans.status} ${ans.text.slice(0, 300)}`)
        } catch (err) {
          failures.push(`${where}\n    no answer: ${(err as Error).message}`)
        }
      }
    }
    await Promise.all([worker(), worker(), worker()])
    console.log(`${group}: ${mine.length} routes, ${jobs.length} requests, ${failures.length} failing`)
    return failures
  }

  it('enumerates the routes from the app, each declared, and every route belongs to a group below', () => {
    expect(undeclared, 'routes served without a declaration (defineRoute)').toEqual([])
    expect(routes.length).toBeGreaterThan(20)
    // The declared schemas yield cases: wrong types and NULs per body field, NULs per query field.
    const casesOf = (route: string) =>
      routes.find((r) => `${r.method} ${r.url}` === route)?.cases.map((c) => c.name) ?? []
    for (const [route, name] of [
      ['POST /v1/webhooks', 'body: every field of the wrong type'],
      ['PATCH /v1/webhooks/:id', 'body: NUL in url'],
      ['POST /v1/wallets/create', 'body: NUL in owner'],
      ['POST /admin/keys', 'body: NUL in account'],
      ['GET /v1/webhooks', 'query: NUL in status'],
      ['GET /v1/nfts/:chain/metadata/:contract/:token_id', 'query: refresh twice'],
    ])
      expect(casesOf(route!), route).toContain(name)
    const orphans = routes.filter((r) => GROUPS.filter(([, m]) => m(r.url)).length !== 1)
    expect(
      orphans.map((r) => `${r.method} ${r.url}`),
      'routes in no (or several) group(s)',
    ).toEqual([])
    for (const [name, match] of GROUPS)
      expect(
        routes.some((r) => match(r.url)),
        name,
      ).toBe(true)
    // Spot-check the enumeration against routes we know exist in src/*/routes.ts.
    const have = new Set(routes.map((r) => `${r.method} ${r.url}`))
    for (const r of [
      'POST /v1/rpc/:chain/:network',
      'GET /v1/tokens/:chain/balances/:address',
      'GET /v1/nfts/:chain/metadata/:contract/:token_id',
      'POST /v1/webhooks/:id/deliveries/:event_id/redeliver',
      'POST /v1/webhooks/:id/rotate-secret',
      'GET /v1/webhooks/:id/events',
      'GET /v1/webhooks/:id/events/:event_id',
      'POST /v1/webhooks/:id/redeliver-failed',
      'POST /dashboard/webhooks/:id/rotate-secret',
      'POST /dashboard/webhooks/:id/delete',
      'POST /dashboard/webhooks/:id/edit',
      'POST /dashboard/webhooks/:id/redeliver-failed',
      'GET /dashboard/webhooks/:id/events/:event_id',
      'POST /v1/wallets/create',
      'GET /v1/gas/:chain/prices',
      'POST /admin/keys/:id/revoke',
    ])
      expect(have, r).toContain(r)
  })

  for (const [group, match] of GROUPS) {
    it(`answers hostile input with the error body: ${group}`, async () => {
      const failures = await sweep(
        group,
        routes.filter((r) => match(r.url)),
      )
      expect(failures, `\n${failures.join('\n')}\n`).toEqual([])
    }, 300_000)
  }

  // A test key's reads and writes of objects go through the environment filter (the networks
  // it may see, http/access.ts visibleTo); mainnet objects themselves: environment-objects.test.ts.
  it('answers hostile input with the error body: object routes with a test key', async () => {
    const objects = routes.filter((r) => /^\/v1\/(webhooks|gas\/policies|gas\/sponsor)/.test(r.url))
    expect(objects.length).toBeGreaterThanOrEqual(12)
    const failures = await sweep('object routes, test key', objects, testKey)
    expect(failures, `\n${failures.join('\n')}\n`).toEqual([])
  }, 300_000)

  it('answers protocol-level garbage (before any route) with the error body and X-Request-Id', async () => {
    const host = `Host: ${origin.host}\r\nConnection: close\r\n`
    const cases: [string, string][] = [
      ['unknown method', `BREW /v1/webhooks HTTP/1.1\r\n${host}x-api-key: ${key}\r\n\r\n`],
      ['headers over 16 KiB', `GET /v1/webhooks HTTP/1.1\r\n${host}x-api-key: ${'k'.repeat(20_000)}\r\n\r\n`],
      ['bad header name', `GET /v1/webhooks HTTP/1.1\r\n${host}bad header: x\r\n\r\n`],
      ['invalid Content-Length', `POST /v1/webhooks HTTP/1.1\r\n${host}content-length: abc\r\n\r\n{}`],
      [
        'Content-Length and chunked',
        `POST /v1/webhooks HTTP/1.1\r\n${host}content-length: 2\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`,
      ],
      [
        'bad chunk size',
        `POST /v1/webhooks HTTP/1.1\r\n${host}transfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
      ],
      [
        'raw latin-1 byte in the path',
        `GET /v1/webhooks/\u00ff HTTP/1.1\r\n${host}x-api-key: ${key}\r\n\r\n`,
      ],
      ['absolute-form garbage target', `GET http://%zz/ HTTP/1.1\r\n${host}\r\n\r\n`],
      [
        'NUL in a header value',
        `GET /v1/webhooks HTTP/1.1\r\n${host}x-api-key: ${key}\r\nx-note: a\u0000b\r\n\r\n`,
      ],
      ['NUL in a header name', `GET /v1/webhooks HTTP/1.1\r\n${host}x-no\u0000te: a\r\n\r\n`],
      ['CONNECT authority-form', `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`],
      ['CONNECT to this server', `CONNECT ${origin.host} HTTP/1.1\r\n${host}x-api-key: ${key}\r\n\r\n`],
      // Methods Node's parser knows but no route serves: the router's refusal, never silence.
      ...['PROPFIND', 'MKCOL', 'PURGE', 'TRACE', 'LINK', 'SOURCE', 'QUERY'].map((m): [string, string] => [
        `method ${m}`,
        `${m} /v1/webhooks HTTP/1.1\r\n${host}x-api-key: ${key}\r\n\r\n`,
      ]),
    ]
    const failures: string[] = []
    for (const [name, text] of cases) {
      try {
        const ans = await sendRaw(origin, text)
        const bad =
          ans.status === 0
            ? 'connection closed without an HTTP answer'
            : (violation(ans, undefined) ?? (ans.headers['x-request-id'] ? undefined : 'no X-Request-Id'))
        if (bad) failures.push(`[${name}]\n    ${bad}; HTTP ${ans.status} ${ans.text.slice(0, 300)}`)
      } catch (err) {
        failures.push(`[${name}]\n    no answer: ${(err as Error).message}`)
      }
    }
    expect(failures, `\n${failures.join('\n')}\n`).toEqual([])
  })
})
