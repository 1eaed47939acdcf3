import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Gate } from '../common/gate.ts'
import { type FetchPolicy, loadDocument } from './fetcher.ts'
import { parseMetadata } from './parse.ts'
import { expandId, resolveUri, toGatewayUrl } from './uri.ts'

const GW = { ipfs: 'https://gw.example/ipfs/', arweave: 'https://ar.example/' }

describe('token URIs', () => {
  it('expands ERC-1155 {id} to 64 lowercase hex digits, everywhere it occurs', () => {
    expect(expandId('https://x/{id}.json', 0xabcn)).toBe(`https://x/${'0'.repeat(61)}abc.json`)
    expect(expandId('{id}/{id}', 1n)).toBe(`${'0'.repeat(63)}1/${'0'.repeat(63)}1`)
    expect(expandId('https://x/1.json', 5n)).toBe('https://x/1.json')
    expect(expandId('{id}', 2n ** 256n - 1n)).toBe('f'.repeat(64))
  })

  it('rewrites ipfs://, legacy ipfs://ipfs/, bare CIDs and ar:// to the configured gateways', () => {
    const cid = 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG'
    expect(toGatewayUrl(`ipfs://${cid}/1.json`, GW)).toBe(`https://gw.example/ipfs/${cid}/1.json`)
    expect(toGatewayUrl(`ipfs://ipfs/${cid}`, GW)).toBe(`https://gw.example/ipfs/${cid}`)
    expect(toGatewayUrl(cid, GW)).toBe(`https://gw.example/ipfs/${cid}`)
    expect(toGatewayUrl('ar://abc_DEF-123', GW)).toBe('https://ar.example/abc_DEF-123')
    expect(toGatewayUrl('https://a.example/x', GW)).toBe('https://a.example/x')
    expect(toGatewayUrl('ftp://a.example/x', GW)).toBeNull()
    expect(resolveUri('ipfs://', GW).kind).toBe('unsupported')
    expect(resolveUri('', GW)).toMatchObject({ kind: 'unsupported', reason: 'the token URI is empty' })
    expect(resolveUri('gopher://x', GW)).toMatchObject({ reason: 'URI scheme gopher: is not supported' })
  })

  it('decodes data: URIs, base64 and plain (percent-encoded or raw)', () => {
    const json = '{"name":"A+B %"}'
    const b64 = resolveUri(`data:application/json;base64,${Buffer.from(json).toString('base64')}`, GW)
    expect(b64).toMatchObject({ kind: 'inline', mediaType: 'application/json' })
    expect(b64.kind === 'inline' && b64.body.toString()).toBe(json)
    const pct = resolveUri(`data:application/json;charset=utf-8,${encodeURIComponent(json)}`, GW)
    expect(pct.kind === 'inline' && pct.body.toString()).toBe(json)
    // Raw JSON with a stray % is taken literally rather than refused.
    const raw = resolveUri(`data:application/json,${json}`, GW)
    expect(raw.kind === 'inline' && raw.body.toString()).toBe(json)
    expect(resolveUri('data:,hello', GW)).toMatchObject({ kind: 'inline', mediaType: 'text/plain' })
    expect(resolveUri('data:application/json;base64,***', GW).kind).toBe('unsupported')
  })
})

describe('metadata documents', () => {
  it('reads traits with every value as a string, from arrays or objects', () => {
    const m = parseMetadata(
      {
        name: 'N',
        image_url: 'ipfs://x',
        attributes: [
          { trait_type: 'level', value: 5 },
          { trait_type: 'big', value: 1e21 },
          { trait_type: 'neg', value: -2.5 },
          { trait_type: 'shiny', value: true },
          { trait_type: 'color', value: 'red' },
          { value: 'untyped' },
          { trait_type: 'skipped', value: { nested: 1 } },
          'junk',
        ],
      },
      null,
    )
    expect(m).toEqual({
      name: 'N',
      description: null,
      image: 'ipfs://x',
      traits: [
        { trait_type: 'level', value: '5' },
        { trait_type: 'big', value: '1000000000000000000000' },
        { trait_type: 'neg', value: '-2.5' },
        { trait_type: 'shiny', value: 'true' },
        { trait_type: 'color', value: 'red' },
        { trait_type: '', value: 'untyped' },
      ],
    })
    expect(parseMetadata({ attributes: { eyes: 'blue', age: 3 } }, null).traits).toEqual([
      { trait_type: 'eyes', value: 'blue' },
      { trait_type: 'age', value: '3' },
    ])
    // ERC-1155: {id} inside JSON values is substituted too; image_data SVG becomes a data: URI.
    const e = parseMetadata({ name: 'Item {id}', image_data: '<svg/>' }, 16n)
    expect(e.name).toBe(`Item ${'0'.repeat(62)}10`)
    expect(e.image).toBe(`data:image/svg+xml;base64,${Buffer.from('<svg/>').toString('base64')}`)
  })

  it('keeps a long data: image whole (a cut URI is a broken image) and drops an oversized one', () => {
    const svg = `<svg>${'x'.repeat(50_000)}</svg>`
    const uri = `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`
    expect(parseMetadata({ image: uri }, null).image).toBe(uri)
    expect(parseMetadata({ image: `data:image/png;base64,${'A'.repeat(300_000)}` }, null).image).toBeNull()
    expect(parseMetadata({ image_data: `<svg>${'x'.repeat(300_000)}</svg>` }, null).image).toBeNull()
  })
})

describe('fetching metadata through the SSRF-safe fetch', () => {
  let server: Server
  let base: string
  const policy = (over: Partial<FetchPolicy> = {}): FetchPolicy => ({
    timeoutMs: 800,
    maxBytes: 1024 * 1024,
    allowLoopback: true,
    maxRedirects: 3,
    gateways: { ipfs: `${base}/ipfs/`, arweave: `${base}/ar/` },
    ...over,
  })

  beforeAll(async () => {
    server = createServer((req, res) => {
      const url = req.url ?? '/'
      const json = (body: unknown, type = 'application/json') => {
        res.setHeader('content-type', type)
        res.end(JSON.stringify(body))
      }
      if (url === '/ok.json') return json({ name: 'ok' })
      if (url === '/plain.json') return json({ name: 'plain' }, 'text/plain; charset=utf-8')
      if (url === '/ipfs/QmX/1.json') return json({ name: 'from ipfs' })
      if (url === '/ar/tx1') return json({ name: 'from arweave' })
      if (url === '/html') return json({ name: 'html' }, 'text/html')
      if (url === '/notjson') return json('just a string')
      if (url === '/hop') return res.writeHead(302, { location: '/ok.json' }).end()
      if (url === '/loop') return res.writeHead(302, { location: '/loop' }).end()
      if (url === '/to-private') return res.writeHead(302, { location: 'http://10.1.2.3/meta.json' }).end()
      if (url === '/to-metadata-service')
        return res.writeHead(301, { location: 'http://169.254.169.254/latest/meta-data/' }).end()
      if (url === '/big') {
        // 5 MB of valid JSON, streamed.
        res.setHeader('content-type', 'application/json')
        res.write('{"name":"')
        const chunk = 'a'.repeat(64 * 1024)
        for (let i = 0; i < 80; i++) res.write(chunk)
        res.end('"}')
        return
      }
      if (url === '/slow') return // never answers
      res.writeHead(404).end()
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    server.closeAllConnections()
    await new Promise<void>((r) => server.close(() => r()))
  })

  it('loads documents over http, ipfs:// and ar:// gateways, following a redirect', async () => {
    expect(await loadDocument(`${base}/ok.json`, policy())).toEqual({ ok: true, doc: { name: 'ok' } })
    expect(await loadDocument(`${base}/plain.json`, policy())).toMatchObject({ doc: { name: 'plain' } })
    expect(await loadDocument('ipfs://QmX/1.json', policy())).toMatchObject({ doc: { name: 'from ipfs' } })
    expect(await loadDocument('ar://tx1', policy())).toMatchObject({ doc: { name: 'from arweave' } })
    expect(await loadDocument(`${base}/hop`, policy())).toMatchObject({ doc: { name: 'ok' } })
  })

  it('refuses a loopback URI in production mode (no loopback allowance)', async () => {
    const r = await loadDocument(`${base}/ok.json`, policy({ allowLoopback: false }))
    expect(r).toEqual({
      ok: false,
      error: 'metadata URL refused: it points to a private, loopback or link-local address',
      detail: expect.stringMatching(/loopback/),
    })
  })

  it('refuses redirects to private and link-local addresses, and redirect loops', async () => {
    for (const path of ['/to-private', '/to-metadata-service']) {
      const r = await loadDocument(`${base}${path}`, policy())
      expect(r, path).toMatchObject({ ok: false, error: expect.stringMatching(/^metadata URL refused/) })
    }
    expect(await loadDocument(`${base}/loop`, policy())).toMatchObject({ error: 'more than 3 redirects' })
  })

  it('caps a 5 MB response, times out a slow server, and checks type and shape', async () => {
    expect(await loadDocument(`${base}/big`, policy())).toMatchObject({
      ok: false,
      error: 'metadata larger than 1048576 bytes',
    })
    expect(await loadDocument(`${base}/slow`, policy())).toMatchObject({
      ok: false,
      error: 'no response within 800 ms',
    })
    expect(await loadDocument(`${base}/html`, policy())).toMatchObject({
      error: 'metadata server sent text/html, not JSON',
    })
    expect(await loadDocument(`${base}/notjson`, policy())).toMatchObject({
      error: 'metadata is not a JSON object',
    })
    expect(await loadDocument(`${base}/missing`, policy())).toMatchObject({
      error: 'metadata server answered HTTP 404',
    })
    // U+0000 cannot be stored by PostgreSQL: removed; a "__proto__" key stays a plain key.
    const nul = await loadDocument('data:application/json,{"name":"a\\u0000b","__proto__":{"x":1}}', policy())
    expect(nul).toMatchObject({ ok: true, doc: { name: 'ab' } })
    expect(nul.ok && Object.getPrototypeOf(nul.doc)).toBe(Object.prototype)
    expect(nul.ok && Object.keys(nul.doc)).toEqual(['name', '__proto__'])
    expect(await loadDocument('data:image/png;base64,AAAA', policy())).toMatchObject({
      error: 'data: URI holds image/png, not a JSON document',
    })
  })

  it('cuts hostile nesting, refuses broken JSON, and repairs what PostgreSQL jsonb refuses', async () => {
    // 100,000 levels of objects: parsed, then cut at the depth limit instead of walked.
    const deep = `data:application/json,${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`
    const d = await loadDocument(deep, policy())
    expect(d.ok).toBe(true)
    expect(d.ok && JSON.stringify(d.doc).length).toBeLessThan(300)
    expect(await loadDocument('data:application/json,{"name":', policy())).toMatchObject({
      error: 'metadata is not valid JSON',
    })
    // A lone surrogate ("\ud800") parses in JavaScript but makes PostgreSQL refuse the jsonb.
    const lone = await loadDocument(
      'data:application/json,{"name":"a\\ud800b","e":"\\ud83d\\ude80"}',
      policy(),
    )
    expect(lone).toMatchObject({ ok: true, doc: { name: 'a\uFFFDb', e: '🚀' } })
  })
})

describe('Gate', () => {
  it('never runs more than its bound at once, and runs everything', async () => {
    const limiter = new Gate(3)
    let running = 0
    let peak = 0
    const done = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        limiter.run(async () => {
          running++
          peak = Math.max(peak, running)
          await new Promise((r) => setTimeout(r, 1 + (i % 3)))
          running--
          return i
        }),
      ),
    )
    expect(done).toEqual(Array.from({ length: 20 }, (_, i) => i))
    expect(peak).toBe(3)
  })
})
