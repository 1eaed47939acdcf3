import { describe, expect, it } from 'vitest'
import { Http1Answer, type Http1Done } from './http1-answer.ts'
import { Http1Error } from './http1-error.ts'

/** Feeds `text` to a fresh reader in pieces of `step` bytes; the answers it completed. */
function read(text: string, step = Number.POSITIVE_INFINITY, reader = new Http1Answer()): Http1Done[] {
  const bytes = Buffer.from(text, 'latin1')
  const out: Http1Done[] = []
  for (let i = 0; i < bytes.length; i += Math.min(step, bytes.length)) {
    const done = reader.push(bytes.subarray(i, i + Math.min(step, bytes.length)))
    if (done) out.push(done)
  }
  return out
}

const summary = (d: Http1Done) => ({ status: d.status, body: d.body.toString(), keepAlive: d.keepAlive })

// anvil's own answer, byte for byte.
const ANVIL =
  'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nvary: origin, access-control-request-method, access-control-request-headers\r\naccess-control-allow-origin: *\r\ncontent-length: 42\r\ndate: Fri, 27 Nov 2026 20:17:50 GMT\r\n\r\n{"jsonrpc":"2.0","id":1,"result":"0x7a69"}'

describe('Http1Answer', () => {
  it('reads an answer framed by Content-Length, whole or a byte at a time', () => {
    for (const step of [Number.POSITIVE_INFINITY, 1, 7]) {
      const [d, ...rest] = read(ANVIL, step)
      expect(rest).toEqual([])
      expect(summary(d!)).toEqual({
        status: 200,
        body: '{"jsonrpc":"2.0","id":1,"result":"0x7a69"}',
        keepAlive: true,
      })
    }
  })

  it('reads chunked answers, with chunk extensions and trailers, in any pieces', () => {
    const text =
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: yes\r\n\r\n'
    for (const step of [Number.POSITIVE_INFINITY, 1, 3]) {
      const [d, ...rest] = read(text, step)
      expect(rest).toEqual([])
      expect(summary(d!)).toEqual({ status: 200, body: 'hello, world', keepAlive: true })
    }
    expect(summary(read('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n')[0]!)).toEqual({
      status: 200,
      body: '',
      keepAlive: true,
    })
  })

  it('reads a large body arriving in many pieces, chunked or by length', () => {
    const big = 'x'.repeat(300_000)
    const chunked = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${(100_000).toString(16)}\r\n${big.slice(0, 100_000)}\r\n${(200_000).toString(16)}\r\n${big.slice(100_000)}\r\n0\r\n\r\n`
    const byLength = `HTTP/1.1 200 OK\r\nContent-Length: ${big.length}\r\n\r\n${big}`
    for (const text of [chunked, byLength]) {
      const [d, ...rest] = read(text, 1_000)
      expect(rest).toEqual([])
      expect(d!.body.toString()).toBe(big)
      expect(d!.keepAlive).toBe(true)
    }
  })

  it('reads one answer after another with the same reader', () => {
    const reader = new Http1Answer()
    const a = read(ANVIL, 5, reader)
    const b = read('HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy', 2, reader)
    expect([...a, ...b].map(summary)).toEqual([
      { status: 200, body: '{"jsonrpc":"2.0","id":1,"result":"0x7a69"}', keepAlive: true },
      { status: 503, body: 'busy', keepAlive: true },
    ])
  })

  it('skips informational answers and reads 204 with no body', () => {
    expect(read('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n').map(summary)).toEqual([
      { status: 204, body: '', keepAlive: true },
    ])
  })

  it('says when the socket may not carry another call', () => {
    const keep = (text: string) => read(text)[0]!.keepAlive
    expect(keep('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')).toBe(false)
    expect(keep('HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n')).toBe(false)
    expect(keep('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n')).toBe(true)
    // Bytes nobody asked for after the answer: the framing can no longer be trusted.
    expect(keep('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA')).toBe(false)
    const d = read('HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: 0\r\n\r\n')[0]!
    expect(d.keepAliveMs).toBe(4_000)
  })

  it('reads an answer framed by the end of the socket', () => {
    const reader = new Http1Answer()
    expect(read('HTTP/1.1 200 OK\r\n\r\npart one, ', 4, reader)).toEqual([])
    expect(read('part two', 4, reader)).toEqual([])
    expect(summary(reader.end()!)).toEqual({ status: 200, body: 'part one, part two', keepAlive: false })
    // A length-framed answer cut short is not complete at the end.
    const cut = new Http1Answer()
    read('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc', 1, cut)
    expect(cut.end()).toBeUndefined()
  })

  it.each([
    ['a bad status line', 'HTTP/2 200 OK\r\n\r\n', 'bad status line'],
    ['garbage', 'nonsense\r\n\r\n', 'bad status line'],
    ['a header line with no colon', 'HTTP/1.1 200 OK\r\nbroken\r\n\r\n', 'bad header line'],
    [
      'a colonless line before a good one',
      'HTTP/1.1 200 OK\r\nbroken\r\nContent-Length: 0\r\n\r\n',
      'bad header line',
    ],
    ['a header line with no name', 'HTTP/1.1 200 OK\r\n: 0\r\n\r\n', 'bad header line'],
    ['a non-numeric length', 'HTTP/1.1 200 OK\r\nContent-Length: 1e3\r\n\r\n', 'bad content-length'],
    ['two lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n', 'conflicting'],
    [
      'a length and chunked',
      'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n',
      'both content-length and chunked',
    ],
    [
      'an unsupported coding',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n',
      'unsupported transfer-encoding',
    ],
    ['a bad chunk size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 'bad chunk size'],
    [
      'a chunk not ended by CRLF',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n',
      'chunk not ended by CRLF',
    ],
    ['a protocol switch', 'HTTP/1.1 101 Switching Protocols\r\n\r\n', 'protocol switch'],
    ['a body over the limit', 'HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n', 'body too large'],
  ])('refuses %s', (_name, text, message) => {
    let caught: unknown
    try {
      read(text)
    } catch (err) {
      caught = err
    }
    expect(caught).toBeInstanceOf(Http1Error)
    expect((caught as Http1Error).code).toBe('HPE_INVALID')
    expect((caught as Error).message).toContain(message)
  })

  it('refuses a head that never ends once it passes 64 KiB', () => {
    const reader = new Http1Answer()
    reader.push(Buffer.from('HTTP/1.1 200 OK\r\n'))
    const line = Buffer.from(`X-Filler: ${'a'.repeat(1000)}\r\n`)
    expect(() => {
      for (let i = 0; i < 100; i++) reader.push(line)
    }).toThrow(/headers too large/)
  })
})
