import { createServer, type Server } from 'node:http'
import path from 'node:path'
import { build } from 'esbuild'
import { type Browser, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { CHROMIUM, CHROMIUM_ARGS, describeBrowser } from '../../test/fixtures/dashboard/browser-fixture.ts'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'

/**
 * A dApp page on another origin calls Halyard from a real Chromium with viem's `http` and
 * `webSocket` transports (docs/browser.md): the page is served by a second HTTP server
 * on another port (another origin), viem bundled for it with esbuild. A key restricted to the
 * page's origin works over both transports (the browser's CORS preflight included); a key
 * restricted to another origin is refused on both; the page can read the rate-limit headers.
 */

/** The page's module: viem, and the calls the test drives through `window.halyard`. */
const PAGE_MODULE = `
import { createPublicClient, http, webSocket } from 'viem'
const timeout = (ms) => new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), ms))
window.halyard = {
  async httpBlockNumber(url, key) {
    const client = createPublicClient({ transport: http(url, { retryCount: 0, fetchOptions: { headers: { 'X-API-Key': key } } }) })
    try {
      return { ok: String(await client.getBlockNumber()) }
    } catch (e) {
      return { error: String(e.status ?? '') + ' ' + String(e.details ?? e.message) }
    }
  },
  async wsNewBlock(url, mine) {
    const client = createPublicClient({ transport: webSocket(url, { retryCount: 0, reconnect: false }) })
    try {
      const first = await Promise.race([client.getBlockNumber(), timeout(15000)])
      const next = await Promise.race([
        new Promise((resolve, reject) => {
          // A block mined before the subscription is registered is never pushed: ask for one
          // each second until one arrives (a loaded machine may take that long to subscribe).
          const ask = () => fetch(mine, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'mine' }).catch(() => {})
          const asking = setInterval(ask, 1000)
          const stop = client.watchBlockNumber({
            poll: false,
            onBlockNumber: (n) => { if (n > first) { clearInterval(asking); stop(); resolve(n) } },
            onError: (e) => { clearInterval(asking); reject(e) },
          })
          ask()
        }),
        timeout(20000),
      ])
      return { ok: String(first) + '->' + String(next) }
    } catch (e) {
      return { error: String(e.message) }
    }
  },
  async rateLimitHeaders(url, key) {
    const r = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-API-Key': key },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
    })
    return {
      status: r.status,
      remaining: r.headers.get('X-RateLimit-Remaining'),
      limit: r.headers.get('X-RateLimit-Limit'),
      requestId: r.headers.get('X-Request-Id'),
    }
  },
}
document.title = 'ready'
`

describeBrowser('Halyard from a browser on another origin (viem http + webSocket)', () => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let site: Server
  let pageOrigin: string
  let browser: Browser
  let page: Page

  async function key(origins: string[]): Promise<string> {
    const auth = h.halyard.ctx.auth
    const email = `b-${Math.random().toString(36).slice(2)}@test.local`
    await auth.createAccount(email, 'free')
    return (await auth.createKey({ accountEmail: email, env: 'test', allow: { origins } })).key
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await storageBackends()[0]!.open()
    h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage })
    const bundle = await build({
      stdin: { contents: PAGE_MODULE, resolveDir: path.resolve(import.meta.dirname, '../..') },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      write: false,
      logLevel: 'silent',
    })
    const js = bundle.outputFiles[0]!.text
    // The dApp's own server: the page and its script, and `/mine` (the page asks for a block so
    // that its subscription has an event to see; anvil mines on request).
    site = createServer((req, res) => {
      if (req.url === '/app.js') {
        res.writeHead(200, { 'content-type': 'text/javascript' }).end(js)
      } else if (req.url === '/mine') {
        fetch(anvil.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'evm_mine', params: [] }),
        }).then(
          () => res.writeHead(200, { 'access-control-allow-origin': '*' }).end('ok'),
          () => res.writeHead(502).end(),
        )
      } else {
        res
          .writeHead(200, { 'content-type': 'text/html' })
          .end('<!doctype html><title>loading</title><script type="module" src="/app.js"></script>')
      }
    })
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
    const addr = site.address()
    pageOrigin = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`
    expect(pageOrigin).not.toBe(h.halyard.origin)
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
    page = await browser.newPage()
    await page.goto(`${pageOrigin}/`)
    await page.waitForFunction('document.title === "ready"')
  })
  afterAll(async () => {
    await browser?.close()
    await new Promise((r) => (site ? site.close(r) : r(null)))
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  type Out = { ok?: string; error?: string }
  const rpc = () => `${h.baseUrl}/rpc/ethereum/devnet`
  const ws = (k: string) => `${h.halyard.wsOrigin}/v1/ws/ethereum/devnet?apiKey=${k}`
  const httpBlockNumber = (url: string, k: string) =>
    page.evaluate(
      ([u, kk]) =>
        (
          globalThis as unknown as { halyard: { httpBlockNumber(a: string, b: string): Promise<Out> } }
        ).halyard.httpBlockNumber(u!, kk!),
      [url, k],
    )
  const wsNewBlock = (url: string) =>
    page.evaluate(
      ([u, m]) =>
        (
          globalThis as unknown as { halyard: { wsNewBlock(a: string, b: string): Promise<Out> } }
        ).halyard.wsNewBlock(u!, m!),
      [url, `${pageOrigin}/mine`],
    )

  it("a key restricted to the page's origin works over http() and webSocket()", async () => {
    const k = await key([pageOrigin])
    const viaHttp = await httpBlockNumber(rpc(), k)
    expect(viaHttp.error).toBeUndefined()
    expect(Number(viaHttp.ok)).toBeGreaterThanOrEqual(0)
    const viaWs = await wsNewBlock(ws(k))
    expect(viaWs.error).toBeUndefined()
    const [first, next] = (viaWs.ok ?? '').split('->').map(Number)
    expect(next).toBeGreaterThan(first!)
  })

  it('a key restricted to another origin is refused on both transports, and the page can read why', async () => {
    const k = await key(['https://other.example'])
    const viaHttp = await httpBlockNumber(rpc(), k)
    expect(viaHttp.ok).toBeUndefined()
    expect(viaHttp.error).toContain('403')
    expect(viaHttp.error).toContain(`the origin ${pageOrigin} is not on this API key's allowed origins list`)
    const viaWs = await wsNewBlock(ws(k))
    expect(viaWs.ok).toBeUndefined()
    expect(viaWs.error).toBeDefined()
  })

  it('after the preflight, the page reads the exposed rate-limit and request-id headers', async () => {
    const k = await key([`${pageOrigin}`, '*.example.com'])
    const r = await page.evaluate(
      ([u, kk]) =>
        (
          globalThis as unknown as {
            halyard: {
              rateLimitHeaders(a: string, b: string): Promise<Record<string, string | number | null>>
            }
          }
        ).halyard.rateLimitHeaders(u!, kk!),
      [rpc(), k],
    )
    expect(r.status).toBe(200)
    expect(Number(r.limit)).toBeGreaterThan(0)
    expect(Number(r.remaining)).toBeGreaterThanOrEqual(0)
    expect(r.requestId).toMatch(/^[\w-]{8,}/)
  })
})
