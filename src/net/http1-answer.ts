import { Http1Error } from './http1-error.ts'

/** A whole answer: its status, its body, and whether its socket may carry another call. */
export interface Http1Done {
  status: number
  body: Buffer
  keepAlive: boolean
  /** The node's own idle limit for the socket (`Keep-Alive: timeout=N`), less a margin. */
  keepAliveMs: number | undefined
}

/** An answer's head past this is refused (Node's own server and client use 16 KiB). */
const MAX_HEAD_BYTES = 64 * 1024
/** An answer's body past this is refused: a node's answers are JSON, not unbounded streams. */
const MAX_BODY_BYTES = 512 * 1024 * 1024
/** A node's Keep-Alive timeout is used less this, so Halyard closes the socket before it does. */
const KEEP_ALIVE_MARGIN_MS = 1_000

const CRLF = Buffer.from('\r\n')
const HEAD_END = Buffer.from('\r\n\r\n')

/**
 * How the body is framed. Chunked: `left` bytes of the current chunk still to come, then its CRLF
 * (`crlf`); with neither, a size line is next.
 */
type Framing =
  | { kind: 'length'; left: number }
  | { kind: 'chunked'; left: number; crlf: boolean }
  | { kind: 'close' }

const invalid = (what: string) => new Http1Error('HPE_INVALID', `invalid HTTP answer: ${what}`)

/**
 * Reads one HTTP/1.1 answer at a time from a socket's chunks: the status line and headers, then a
 * body framed by Content-Length, chunked encoding, or the end of the socket (RFC 9112 §6.3).
 * Informational (1xx) answers are skipped. It throws an Http1Error for anything it cannot frame,
 * after which the socket is not reused.
 */
export class Http1Answer {
  private pending: Buffer | undefined
  private head: { status: number; keepAlive: boolean; keepAliveMs: number | undefined } | undefined
  private framing: Framing | undefined
  private readonly parts: Buffer[] = []
  private size = 0

  /** Takes the socket's next chunk; the whole answer once it is complete. */
  push(chunk: Buffer): Http1Done | undefined {
    let buf = this.pending === undefined ? chunk : Buffer.concat([this.pending, chunk])
    this.pending = undefined
    while (true) {
      if (this.head === undefined) {
        const end = buf.indexOf(HEAD_END)
        if (end < 0) {
          if (buf.length > MAX_HEAD_BYTES) throw invalid('headers too large')
          this.pending = buf
          return undefined
        }
        if (end > MAX_HEAD_BYTES) throw invalid('headers too large')
        const informational = this.readHead(buf.toString('latin1', 0, end))
        buf = buf.subarray(end + 4)
        if (informational) continue
      }
      const framing = this.framing!
      if (framing.kind === 'length') {
        const take = Math.min(framing.left, buf.length)
        if (take > 0) this.add(buf.subarray(0, take))
        framing.left -= take
        buf = buf.subarray(take)
        if (framing.left > 0) return undefined
        return this.finish(buf.length === 0)
      }
      if (framing.kind === 'close') {
        if (buf.length > 0) this.add(buf)
        return undefined
      }
      // Chunked: a size line, the data and its CRLF; a zero size, then trailers and a blank line.
      // A chunk's data is taken as it arrives, like a length-framed body: never copied twice.
      if (framing.left > 0) {
        const take = Math.min(framing.left, buf.length)
        this.add(buf.subarray(0, take))
        framing.left -= take
        buf = buf.subarray(take)
        if (framing.left > 0) return undefined
        framing.crlf = true
      }
      if (framing.crlf) {
        if (buf.length < 2) {
          this.pending = buf.length > 0 ? buf : undefined
          return undefined
        }
        if (buf[0] !== 13 || buf[1] !== 10) throw invalid('chunk not ended by CRLF')
        framing.crlf = false
        buf = buf.subarray(2)
      }
      const line = buf.indexOf(CRLF)
      if (line < 0) {
        if (buf.length > MAX_HEAD_BYTES) throw invalid('chunk size line too long')
        this.pending = buf.length > 0 ? buf : undefined
        return undefined
      }
      const sizeText = buf.toString('latin1', 0, line).split(';', 1)[0]!.trim()
      if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) throw invalid('bad chunk size')
      const size = Number.parseInt(sizeText, 16)
      if (size === 0) {
        // Trailers (ignored) end with a blank line; with none, the blank line follows at once.
        const rest = buf.subarray(line + 2)
        const blank = rest.subarray(0, 2).equals(CRLF) ? 0 : rest.indexOf(HEAD_END)
        if (blank < 0) {
          if (rest.length > MAX_HEAD_BYTES) throw invalid('trailers too large')
          this.pending = buf
          return undefined
        }
        const after = rest.subarray(blank === 0 ? 2 : blank + 4)
        return this.finish(after.length === 0)
      }
      framing.left = size
      buf = buf.subarray(line + 2)
    }
  }

  /** The socket ended: an answer framed by its end is complete; anything else was cut short. */
  end(): Http1Done | undefined {
    if (this.head === undefined || this.framing?.kind !== 'close') return undefined
    return this.finish(false)
  }

  /** Reads a status line and headers; true for an informational answer (skipped). */
  private readHead(text: string): boolean {
    // "HTTP/1.x NNN": the version's minor digit and the status at fixed places.
    const minor = text.charCodeAt(7)
    if (
      !text.startsWith('HTTP/1.') ||
      (minor !== 48 && minor !== 49) ||
      !/^ \d{3}(?: |\r|$)/.test(text.slice(8, 13))
    )
      throw invalid('bad status line')
    const status = Number(text.slice(9, 12))
    if (status >= 100 && status < 200) {
      if (status === 101) throw invalid('unexpected protocol switch')
      return true
    }
    let length: number | undefined
    let chunked = false
    let keepAlive = minor === 49
    let keepAliveMs: number | undefined
    let at = text.indexOf('\r\n')
    while (at >= 0) {
      const from = at + 2
      at = text.indexOf('\r\n', from)
      const end = at < 0 ? text.length : at
      const colon = text.indexOf(':', from)
      if (colon <= from || colon >= end) throw invalid('bad header line')
      // Only four headers frame the answer or its socket; the rest are not even sliced out.
      const nameLength = colon - from
      if (nameLength !== 14 && nameLength !== 17 && nameLength !== 10) continue
      const name = text.slice(from, colon).toLowerCase()
      const value = text.slice(colon + 1, end).trim()
      if (name === 'content-length') {
        if (!/^\d{1,15}$/.test(value)) throw invalid('bad content-length')
        const n = Number(value)
        if (length !== undefined && length !== n) throw invalid('conflicting content-length')
        length = n
      } else if (name === 'transfer-encoding') {
        chunked = /(?:^|,)\s*chunked$/i.test(value)
        if (!chunked) throw invalid(`unsupported transfer-encoding ${value}`)
      } else if (name === 'connection') {
        if (/(?:^|,)\s*close\s*(?:,|$)/i.test(value)) keepAlive = false
        else if (/(?:^|,)\s*keep-alive\s*(?:,|$)/i.test(value)) keepAlive = true
      } else if (name === 'keep-alive') {
        const timeout = /(?:^|,)\s*timeout=(\d+)/i.exec(value)
        if (timeout) keepAliveMs = Math.max(0, Number(timeout[1]) * 1000 - KEEP_ALIVE_MARGIN_MS)
      }
    }
    if (chunked && length !== undefined) throw invalid('both content-length and chunked')
    if (length !== undefined && length > MAX_BODY_BYTES) throw invalid('body too large')
    this.head = { status, keepAlive, keepAliveMs }
    if (status === 204 || status === 304) this.framing = { kind: 'length', left: 0 }
    else if (chunked) this.framing = { kind: 'chunked', left: 0, crlf: false }
    else if (length !== undefined) this.framing = { kind: 'length', left: length }
    else {
      this.framing = { kind: 'close' }
      this.head.keepAlive = false
    }
    return false
  }

  private add(part: Buffer): void {
    this.size += part.length
    if (this.size > MAX_BODY_BYTES) throw invalid('body too large')
    this.parts.push(part)
  }

  /** The answer, and the reader reset for the next; bytes past it mean the socket is not reused. */
  private finish(clean: boolean): Http1Done {
    const { status, keepAlive, keepAliveMs } = this.head!
    const parts = this.parts
    const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts)
    this.head = undefined
    this.framing = undefined
    this.parts.length = 0
    this.size = 0
    this.pending = undefined
    return { status, body, keepAlive: keepAlive && clean, keepAliveMs }
  }
}
