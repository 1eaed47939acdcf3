import { randomBytes } from 'node:crypto'
import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends, type TestStorage } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { BAD_KEY, HANG_MS } from '../server/hostile-cases.ts'
import { violation } from '../server/hostile-harness.ts'
import { DEFAULT_WS_OPTIONS } from './service.ts'

/**
 * The hostile-input rule for WebSocket upgrades, which never reach Fastify (src/ws/upgrade.ts and
 * WsService.handleUpgrade answer them): every hostile upgrade request gets an HTTP answer within
 * HANG_MS — a 101, or a 4xx carrying `{"error":{code,message,status}}` — never a 5xx, and after
 * a refusal the server lets go of the socket. After a good upgrade, garbage frames get a JSON-RPC
 * error or a close frame with a code, and the server still serves new connections afterwards.
 * Raw node:net sockets, so every byte on the wire is the test's.
 */

/** How long the server gets to close its side (and forget the socket) after a refusal. */
const CLOSE_MS = 2_000

interface Reply {
  status: number
  head: string
  contentType: string
  text: string
  /** Bytes after the head of a 101 (early frames). */
  rest: Buffer
  /** The server sent FIN within CLOSE_MS of its answer. */
  serverEnded: boolean
  socket: net.Socket
}

/** Writes `bytes` on a fresh half-open socket; resolves with the HTTP answer (or status 0). */
function exchange(port: number, bytes: string | Buffer): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true })
    let buf = Buffer.alloc(0)
    let ended = false
    let done = false
    const hang = setTimeout(() => finish(new Error(`HANG: no answer within ${HANG_MS} ms`)), HANG_MS)
    const finish = (err?: Error, reply?: Reply) => {
      if (done) return
      done = true
      clearTimeout(hang)
      if (err) {
        socket.destroy()
        reject(err)
      } else resolve(reply!)
    }
    const parse = (final: boolean) => {
      const at = buf.indexOf('\r\n\r\n')
      if (at < 0) return final ? finish(undefined, reply(0, buf.toString('latin1'), '')) : undefined
      const head = buf.subarray(0, at).toString('latin1')
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0)
      const body = buf.subarray(at + 4)
      if (status === 101) return finish(undefined, reply(101, head, '', body))
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? Number.NaN)
      if (!final && !(body.length >= length)) return
      // The whole answer is in: give the server CLOSE_MS to send its FIN.
      const text = body.toString('utf8')
      if (ended) return finish(undefined, reply(status, head, text))
      const t = setTimeout(() => finish(undefined, reply(status, head, text)), CLOSE_MS)
      socket.once('end', () => clearTimeout(t))
    }
    const contentType = (head: string) => /\r\ncontent-type: *([^\r\n]*)/i.exec(head)?.[1] ?? ''
    const reply = (status: number, head: string, text: string, rest = Buffer.alloc(0)): Reply => ({
      status,
      head,
      contentType: contentType(head),
      text,
      rest,
      serverEnded: ended,
      socket,
    })
    socket.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c])
      if (!done) parse(false)
    })
    const onEnd = () => {
      ended = true
      if (!done) parse(true)
    }
    socket.on('end', onEnd)
    socket.on('error', onEnd)
    socket.write(bytes)
  })
}

// --- WebSocket frames (RFC 6455) ----------------------------------------------------------------

/** A client frame: masked unless told otherwise; `claim` overrides the announced length. */
function frame(
  opcode: number,
  payload: Buffer,
  o: { mask?: boolean; rsv1?: boolean; claim?: number } = {},
): Buffer {
  const len = o.claim ?? payload.length
  const mask = o.mask ?? true
  const ext = len < 126 ? Buffer.alloc(0) : Buffer.alloc(len < 65_536 ? 2 : 8)
  if (len >= 65_536) ext.writeBigUInt64BE(BigInt(len))
  else if (len >= 126) ext.writeUInt16BE(len)
  const b0 = 0x80 | (o.rsv1 ? 0x40 : 0) | opcode
  const b1 = (mask ? 0x80 : 0) | (len < 126 ? len : len < 65_536 ? 126 : 127)
  const key = mask ? randomBytes(4) : Buffer.alloc(0)
  const body = Buffer.from(payload)
  if (mask) for (let i = 0; i < body.length; i++) body[i]! ^= key[i % 4]!
  return Buffer.concat([Buffer.from([b0, b1]), ext, key, body])
}

interface ServerFrame {
  opcode: number
  payload: Buffer
}

/** Splits whole (unmasked, server-sent) frames off the front of `buf`. */
function takeFrames(buf: Buffer): { frames: ServerFrame[]; rest: Buffer } {
  const frames: ServerFrame[] = []
  let at = 0
  while (buf.length - at >= 2) {
    let len = buf[at + 1]! & 0x7f
    let off = at + 2
    if (len === 126) {
      if (buf.length < off + 2) break
      len = buf.readUInt16BE(off)
      off += 2
    } else if (len === 127) {
      if (buf.length < off + 8) break
      len = Number(buf.readBigUInt64BE(off))
      off += 8
    }
    if (buf.length < off + len) break
    frames.push({ opcode: buf[at]! & 0x0f, payload: buf.subarray(off, off + len) })
    at = off + len
  }
  return { frames, rest: buf.subarray(at) }
}

/** An upgraded raw connection: every server frame and whether the TCP connection has closed. */
class RawWs {
  readonly frames: ServerFrame[] = []
  tcpClosed = false
  private buf: Buffer

  constructor(
    readonly socket: net.Socket,
    early: Buffer,
  ) {
    this.buf = early
    this.drain()
    socket.on('data', (c: Buffer) => {
      this.buf = Buffer.concat([this.buf, c])
      this.drain()
    })
    socket.on('close', () => {
      this.tcpClosed = true
    })
  }

  private drain() {
    const { frames, rest } = takeFrames(this.buf)
    this.frames.push(...frames)
    this.buf = rest
  }

  /** The first JSON-RPC error frame or close frame, within HANG_MS. */
  async verdict(): Promise<{ rpcError?: { code: number; message: string }; closeCode?: number }> {
    const deadline = Date.now() + HANG_MS
    while (Date.now() < deadline) {
      for (const f of this.frames) {
        if (f.opcode === 0x8) return { closeCode: f.payload.length >= 2 ? f.payload.readUInt16BE(0) : 0 }
        if (f.opcode !== 0x1) continue
        const msg = JSON.parse(f.payload.toString('utf8')) as { error?: { code: number; message: string } }
        if (msg.error) return { rpcError: msg.error }
      }
      if (this.tcpClosed) return {}
      await new Promise((r) => setTimeout(r, 20))
    }
    throw new Error(`HANG: no JSON-RPC error and no close frame within ${HANG_MS} ms`)
  }

  /** One JSON-RPC call; its reply's `result`. */
  async call(method: string): Promise<unknown> {
    const id = Math.floor(Math.random() * 1e9)
    this.socket.write(frame(0x1, Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method, params: [] }))))
    const deadline = Date.now() + HANG_MS
    while (Date.now() < deadline) {
      for (const f of this.frames) {
        if (f.opcode !== 0x1) continue
        const msg = JSON.parse(f.payload.toString('utf8')) as { id?: number; result?: unknown }
        if (msg.id === id) return msg.result
      }
      await new Promise((r) => setTimeout(r, 20))
    }
    throw new Error(`HANG: no reply to ${method}`)
  }
}

describe('hostile WebSocket upgrades and frames (PGlite)', () => {
  let anvil: AnvilProcess
  let storage: TestStorage
  let h: TestHalyard
  let key: string
  let testKey: string
  let port: number
  let host: string
  const connections = () => new Promise<number>((r) => h.halyard.app.server.getConnections((_e, n) => r(n)))

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await storageBackends()[0]!.open()
    const noIndexer = { indexer: { enabled: false } }
    h = await startTestHalyard({
      storage,
      networks: [anvilNetwork(anvil, noIndexer), anvilNetwork(anvil, { ...noIndexer, network: 'mainnet' })],
    })
    key = await h.createKey({ env: 'live' })
    testKey = await h.createKey({ env: 'test' })
    const origin = new URL(h.halyard.origin)
    port = Number(origin.port)
    host = origin.host
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  /** An upgrade request; `headers` values replace the defaults, null drops one. */
  const upgrade = (
    path: string,
    o: { method?: string; headers?: Record<string, string | null>; body?: string } = {},
  ) => {
    const all: Record<string, string | null> = {
      host,
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-key': randomBytes(16).toString('base64'),
      'sec-websocket-version': '13',
      'x-api-key': key,
      ...o.headers,
    }
    const lines = Object.entries(all).flatMap(([k, v]) => (v === null ? [] : [`${k}: ${v}`]))
    return `${o.method ?? 'GET'} ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${o.body ?? ''}`
  }
  const q = { 'x-api-key': null } // the key comes from ?apiKey= only

  const DEV = '/v1/ws/ethereum/devnet'
  const query = (qs: string) => upgrade(`${DEV}?${qs}`, { headers: q })
  const hdr = (headers: Record<string, string | null>) => upgrade(DEV, { headers })
  const alc = (rest: string, headers: Record<string, string | null> = {}) =>
    upgrade(`/v1/alchemy/${rest}`, { headers: { ...q, ...headers } })
  const KEY_RE = /Sec-WebSocket-Key/i
  const VERSION_RE = /Sec-WebSocket-Version/i

  type UpgradeCase = [name: string, bytes: () => string | Buffer, want?: number, mention?: RegExp]
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

  it('answers every hostile upgrade request with 101 or the error body, then lets go of the socket', async () => {
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

  const open = async (): Promise<RawWs> => {
    const ans = await exchange(port, upgrade(DEV))
    expect(ans.status, ans.text).toBe(101)
    return new RawWs(ans.socket, ans.rest)
  }

  it('answers garbage frames with a JSON-RPC error or a close code, and keeps serving', async () => {
    const max = DEFAULT_WS_OPTIONS.maxPayloadBytes
    expect(h.halyard.services.ws.options.maxPayloadBytes).toBe(max)
    type FrameCase = [name: string, bytes: Buffer, want: 'rpc' | number | 'either']
    const frames: FrameCase[] = [
      ['non-JSON text', frame(0x1, Buffer.from('{not json')), 'rpc'],
      ['binary frame of random bytes', frame(0x2, randomBytes(64)), 'either'],
      ['text over maxPayload (header only)', frame(0x1, Buffer.alloc(0), { claim: max + 1 }), 1009],
      ['text over maxPayload (whole)', frame(0x1, Buffer.alloc(max + 1, 0x61)), 1009],
      ['reserved opcode 0x3', frame(0x3, Buffer.from('x')), 1002],
      ['reserved control opcode 0xB', frame(0xb, Buffer.from('x')), 1002],
      ['unmasked client frame', frame(0x1, Buffer.from('{}'), { mask: false }), 1002],
      ['RSV1 without an extension', frame(0x1, Buffer.from('{}'), { rsv1: true }), 1002],
      ['ping with 126-byte payload', frame(0x9, Buffer.alloc(126)), 1002],
      ['invalid UTF-8 text', frame(0x1, Buffer.from([0xc3, 0x28, 0xff])), 1007],
      ['continuation without a start', frame(0x0, Buffer.from('x')), 1002],
      ['close with code 999', frame(0x8, Buffer.from([0x03, 0xe7])), 1002],
    ]
    const failures: string[] = []
    const seen: string[] = []
    for (const [name, bytes, want] of frames) {
      const c = await open()
      c.socket.write(bytes)
      try {
        const v = await c.verdict()
        const got = v.rpcError
          ? `JSON-RPC error ${v.rpcError.code} ${v.rpcError.message}`
          : `close ${v.closeCode}`
        const ok =
          (want === 'rpc' && v.rpcError !== undefined && v.rpcError.message !== '') ||
          (typeof want === 'number' && v.closeCode === want) ||
          (want === 'either' && (v.rpcError !== undefined || (v.closeCode ?? 0) >= 1000))
        seen.push(`${name}: ${got}`)
        if (!ok) failures.push(`[${name}] want ${want}, got ${got}`)
        // After an error reply the connection is still usable.
        if (v.rpcError && (await c.call('eth_chainId')) !== '0x7a69')
          failures.push(`[${name}] unusable after`)
      } catch (err) {
        failures.push(`[${name}] ${(err as Error).message}`)
      }
      c.socket.destroy()
    }
    console.log(`frame answers:\n  ${seen.join('\n  ')}`)
    expect(failures, `\n${failures.join('\n')}\n`).toEqual([])

    // The server survived all of it: a new connection is served, and so is plain HTTP.
    const after = await open()
    expect(await after.call('eth_chainId')).toBe('0x7a69')
    after.socket.destroy()
    expect((await fetch(`${h.halyard.origin}/health`)).status).toBe(200)
  }, 300_000)
})
