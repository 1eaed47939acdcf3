import { describe, expect, it } from 'vitest'
import { DEV, hostileWsFixture } from '../../test/fixtures/ws/hostile-fixture.ts'
import { CLOSE_MS, exchange, type Reply } from '../../test/fixtures/ws/raw-socket-fixture.ts'
import { violation } from '../../test/hostile/hostile-harness.ts'
import { BAD_KEY, HANG_MS } from '../../test/hostile/hostile-request.ts'

/**
 * The hostile-input rule for WebSocket upgrades, which never reach Fastify (src/ws/upgrade.ts and
 * WsService.handleUpgrade answer them): every hostile upgrade request gets an HTTP answer within
 * HANG_MS — a 101, or a 4xx carrying `{"error":{code,message,status}}` — never a 5xx, and after
 * a refusal the server lets go of the socket. Garbage frames after a good upgrade are
 * frames-hostile.test.ts. Raw node:net sockets, so every byte on the wire is the test's.
 */

describe('hostile WebSocket upgrades (PGlite)', () => {
  const fx = hostileWsFixture()
  const { upgrade, connections } = fx
  const q = { 'x-api-key': null } // the key comes from ?apiKey= only

  const query = (qs: string) => upgrade(`${DEV}?${qs}`, { headers: q })
  const hdr = (headers: Record<string, string | null>) => upgrade(DEV, { headers })
  const alc = (rest: string, headers: Record<string, string | null> = {}) =>
    upgrade(`/v1/alchemy/${rest}`, { headers: { ...q, ...headers } })
  const KEY_RE = /Sec-WebSocket-Key/i
  const VERSION_RE = /Sec-WebSocket-Version/i

  type UpgradeCase = [name: string, bytes: () => string | Buffer, want?: number, mention?: RegExp]

  it('answers every hostile upgrade request with 101 or the error body, then lets go of the socket', async () => {
    const { key, testKey, port } = fx
    const cases: UpgradeCase[] = [
      ['control: good upgrade', () => upgrade(DEV), 101],
      ['no key at all', () => upgrade(DEV, { headers: q }), 401, /API key/],
      ['unknown path: one segment', () => upgrade('/v1/ws/ethereum'), 404],
      ['unknown path: three segments', () => upgrade(`${DEV}/extra`), 404],
      ['unknown path: /v1/ws', () => upgrade('/v1/ws'), 404],
      ['unknown network', () => upgrade('/v1/ws/ethereum/nowhere'), 404],
      ['chain segment 201 chars', () => upgrade(`/v1/ws/${'c'.repeat(201)}/devnet`)],
      ['network segment 10k chars', () => upgrade(`/v1/ws/ethereum/${'n'.repeat(10_000)}`)],
      ['bad escape %ff', () => upgrade('/v1/ws/%ff/devnet')],
      ['bad escape %zz', () => upgrade('/v1/ws/ethereum/%zz')],
      ['bare %', () => upgrade('/v1/ws/ethereum/%')],
      ['.. before the route', () => upgrade('/v1/ws/../ethereum/devnet')],
      ['.. as the network', () => upgrade('/v1/ws/ethereum/..')],
      ['%2e%2e traversal', () => upgrade('/v1/ws/%2e%2e/%2e%2e/v1/ws/ethereum/devnet')],
      ['NUL in the path', () => upgrade('/v1/ws/ethereum%00/devnet')],
      ['NUL after a good ?apiKey=', () => query(`apiKey=${key}%00`), 401, /API key/],
      ['?apiKey=%00', () => query('apiKey=%00'), 401, /API key/],
      ['?apiKey= 10k chars', () => query(`apiKey=${'k'.repeat(10_000)}`), 401, /API key/],
      ['?apiKey= bad then good', () => query(`apiKey=${BAD_KEY}&apiKey=${key}`)],
      ['?apiKey= good then bad', () => query(`apiKey=${key}&apiKey=x`)],
      ['?apiKey= with bad escapes', () => query('apiKey=%zz%ff%')],
      ['missing Sec-WebSocket-Key', () => hdr({ 'sec-websocket-key': null }), 400, KEY_RE],
      ['invalid Sec-WebSocket-Key', () => hdr({ 'sec-websocket-key': 'not a key!' }), 400, KEY_RE],
      ['Sec-WebSocket-Version 12', () => hdr({ 'sec-websocket-version': '12' }), 400, VERSION_RE],
      ['missing Sec-WebSocket-Version', () => hdr({ 'sec-websocket-version': null }), 400, VERSION_RE],
      ['Upgrade: h2c', () => hdr({ upgrade: 'h2c', 'http2-settings': 'AAMAAABkAAQAAP__' }), 400, /Upgrade/i],
      [
        'POST with Upgrade: websocket',
        () => upgrade(DEV, { method: 'POST', headers: { 'content-length': '2' }, body: '{}' }),
        undefined,
        /GET|method/i,
      ],
      ['headers over 16 KiB', () => hdr({ 'x-padding': 'p'.repeat(20_000) }), 400, /header/i],
      [
        'test key on mainnet',
        () => upgrade('/v1/ws/ethereum/mainnet', { headers: { 'x-api-key': testKey } }),
        403,
        /test keys/,
      ],
      ['garbage first line', () => 'GARBAGE\r\n\r\n', 400],
      ['HTTP/9.9 upgrade', () => upgrade(DEV).replace('HTTP/1.1', 'HTTP/9.9'), 400],
      ['TLS ClientHello bytes', () => Buffer.from('16030100a5010000a10303', 'hex'), 400],
      ['bad Sec-WebSocket-Protocol', () => hdr({ 'sec-websocket-protocol': 'a,,b' }), 400, /protocol/i],
      // The Alchemy-compatible root (src/alchemy/ws.ts): the key in the path, never repeated.
      ['alchemy: good upgrade', () => alc(`eth-devnet/v2/${key}`), 101],
      ['alchemy: trailing slash', () => alc(`ethereum-devnet/v2/${key}/`), 101],
      ['alchemy: wrong key', () => alc(`eth-devnet/v2/${BAD_KEY}`), 401, /API key/],
      ['alchemy: wrong path key, good header', () => alc(`eth-devnet/v2/x`, { 'x-api-key': key }), 401],
      ['alchemy: key 10k chars', () => alc(`eth-devnet/v2/${'k'.repeat(10_000)}`), 401],
      ['alchemy: NUL key', () => alc('eth-devnet/v2/%00'), 401],
      ['alchemy: bad escape in the key', () => alc(`eth-devnet/v2/${key}%zz`), 404, /redacted/],
      ['alchemy: extra segment', () => alc(`eth-devnet/v2/${key}/more`), 404, /redacted/],
      ['alchemy: no key', () => alc('eth-devnet/v2/'), 404],
      ['alchemy: unknown network', () => alc(`eth-nowhere/v2/${key}`), 404, /eth-nowhere/],
      ['alchemy: network 10k chars', () => alc(`${'n'.repeat(10_000)}/v2/${key}`), 404],
      ['alchemy: test key on mainnet', () => alc(`eth-mainnet/v2/${testKey}`), 403, /test keys/],
      ['alchemy: bad subprotocol', () => alc(`eth-devnet/v2/${key}`, { 'sec-websocket-protocol': ',' }), 400],
    ]
    const failures: string[] = []
    const seen: string[] = []
    for (const [name, bytes, want, mention] of cases) {
      const sent = bytes()
      const shown = JSON.stringify(sent.toString('latin1').slice(0, 160))
      // Nothing else talks to this server meanwhile: every earlier socket must be gone first.
      const stale = Date.now() + HANG_MS
      while ((await connections()) > 0 && Date.now() < stale) await new Promise((r) => setTimeout(r, 50))
      let ans: Reply
      try {
        ans = await exchange(port, sent)
      } catch (err) {
        failures.push(`[${name}] sent ${shown}\n    no answer: ${(err as Error).message}`)
        continue
      }
      const problems: string[] = []
      if (ans.status === 0) problems.push('connection closed without an HTTP answer')
      else if (ans.status !== 101) {
        const bad = violation(ans, mention)
        if (bad) problems.push(bad)
        if (!ans.serverEnded) problems.push(`server did not close its side within ${CLOSE_MS} ms`)
        // The client stays half-open: the server must still drop the socket (no lingering fd).
        const deadline = Date.now() + CLOSE_MS
        while ((await connections()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
        if ((await connections()) > 0)
          problems.push(`server still holds the socket ${CLOSE_MS} ms after refusing (client left half-open)`)
      }
      if (want !== undefined && ans.status !== want) problems.push(`want HTTP ${want}`)
      if (ans.text.includes(key) || ans.text.includes(testKey)) problems.push('the answer repeats a key')
      ans.socket.destroy()
      const line = `HTTP ${ans.status} ${ans.contentType} ${ans.text.slice(0, 200)}`
      seen.push(`${name}: ${line}`)
      if (problems.length)
        failures.push(`[${name}] sent ${shown}\n    ${problems.join('; ')}\n    got ${line}`)
    }
    console.log(`upgrade answers:\n  ${seen.join('\n  ')}`)
    expect(failures, `\n${failures.join('\n')}\n`).toEqual([])
  }, 300_000)
})
