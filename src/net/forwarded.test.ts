import http from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Forwarded, forwarded } from './forwarded.ts'

/**
 * The trusted-proxy rule on real sockets: a raw Node server (as the JSON-RPC fast lane and
 * WebSocket upgrades see requests) and Fastify with the same list as `trustProxy`, whose
 * `request.ip` must agree. The test's requests come from 127.0.0.1.
 */

function get(
  port: number,
  headers: Record<string, string | string[]>,
): Promise<{ ip: string; proto: string; fastifyIp?: string }> {
  return new Promise((resolve, reject) => {
    const r = http.request({ host: '127.0.0.1', port, path: '/', headers, agent: false }, (res) => {
      let text = ''
      res.on('data', (c: Buffer) => {
        text += c.toString()
      })
      res.on('end', () => resolve(JSON.parse(text)))
    })
    r.on('error', reject)
    r.end()
  })
}

describe('clientAddress / requestProtocol (src/net/forwarded.ts)', () => {
  const servers: { close(): unknown }[] = []
  const ports: Record<string, number> = {}

  async function raw(name: string, f: Forwarded) {
    const server = http.createServer((req, res) =>
      res.end(JSON.stringify({ ip: f.clientAddress(req), proto: f.requestProtocol(req) })),
    )
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    servers.push(server)
    ports[name] = (server.address() as AddressInfo).port
  }

  beforeAll(async () => {
    await raw('none', forwarded([]))
    await raw('loopback', forwarded(['127.0.0.1']))
    await raw('two tiers', forwarded(['127.0.0.0/8', '10.0.0.0/8', 'fd00::/8']))
    await raw('elsewhere', forwarded(['192.0.2.0/24']))
    const f = forwarded(['127.0.0.1', '10.0.0.0/8'])
    const app = Fastify({ trustProxy: (a: string) => f.trusts(a) })
    app.get('/', async (request) => ({
      ip: f.clientAddress(request.raw),
      proto: f.requestProtocol(request.raw),
      fastifyIp: request.ip,
    }))
    await app.listen({ host: '127.0.0.1', port: 0 })
    servers.push(app)
    ports.fastify = (app.server.address() as AddressInfo).port
  })
  afterAll(async () => {
    for (const s of servers) await s.close()
  })

  it('without trusted proxies, the headers are ignored: the client is the peer', async () => {
    const ans = await get(ports.none!, { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https' })
    expect(ans).toEqual({ ip: '127.0.0.1', proto: 'http' })
    // A peer outside the list is not believed either.
    expect(
      await get(ports.elsewhere!, { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https' }),
    ).toEqual({
      ip: '127.0.0.1',
      proto: 'http',
    })
  })

  it('from a trusted peer: the rightmost untrusted X-Forwarded-For entry, and its X-Forwarded-Proto', async () => {
    const at = (port: number, xff: string | string[] | undefined, proto?: string) =>
      get(port, {
        ...(xff === undefined ? {} : { 'x-forwarded-for': xff }),
        ...(proto ? { 'x-forwarded-proto': proto } : {}),
      })
    const one = ports.loopback!
    const two = ports['two tiers']!
    expect(await at(one, '203.0.113.7', 'https')).toEqual({ ip: '203.0.113.7', proto: 'https' })
    expect((await at(one, '198.51.100.1, 203.0.113.7')).ip).toBe('203.0.113.7')
    // The second proxy (10.x) is trusted only where the list says so.
    expect((await at(one, '203.0.113.7, 10.1.2.3')).ip).toBe('10.1.2.3')
    expect((await at(two, '203.0.113.7, 10.1.2.3')).ip).toBe('203.0.113.7')
    expect((await at(two, ['198.51.100.1, 203.0.113.7', '10.1.2.3'])).ip).toBe('203.0.113.7')
    expect((await at(two, '2001:db8::1, fd00::2')).ip).toBe('2001:db8::1')
    expect((await at(two, '::ffff:203.0.113.9')).ip).toBe('203.0.113.9')
    // Every hop trusted: the leftmost is as far as anyone can see.
    expect((await at(two, '10.9.9.9, 10.1.2.3')).ip).toBe('10.9.9.9')
    // A malformed hop: the proxy that forwarded it, never the text.
    expect((await at(two, '203.0.113.7, bogus, 10.1.2.3')).ip).toBe('10.1.2.3')
    expect((await at(one, 'bogus')).ip).toBe('127.0.0.1')
    expect((await at(one, undefined)).ip).toBe('127.0.0.1')
    // The nearest proxy's scheme; anything but https is http.
    expect((await at(one, undefined, 'https, http')).proto).toBe('http')
    expect((await at(one, undefined, 'http, HTTPS')).proto).toBe('https')
    expect((await at(one, undefined, 'gopher')).proto).toBe('http')
  })

  it("Fastify's request.ip honours the same list (trustProxy)", async () => {
    for (const xff of ['203.0.113.7', '198.51.100.1, 203.0.113.7, 10.1.2.3', '10.9.9.9, 10.1.2.3']) {
      const ans = await get(ports.fastify!, { 'x-forwarded-for': xff })
      expect(ans.fastifyIp, xff).toBe(ans.ip)
    }
  })
})
