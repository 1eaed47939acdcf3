import { randomBytes } from 'node:crypto'
import net from 'node:net'
import { HANG_MS } from '../server/hostile-request.ts'

/**
 * Test-only: raw node:net sockets for the hostile WebSocket tests (upgrade-hostile.test.ts and
 * frames-hostile.test.ts), so every byte on the wire is the test's: an HTTP exchange that also
 * notes whether the server let go of the socket, client frames built by hand, and a reader of
 * the server's frames.
 */

/** How long the server gets to close its side (and forget the socket) after a refusal. */
export const CLOSE_MS = 2_000

export interface Reply {
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
export function exchange(port: number, bytes: string | Buffer): Promise<Reply> {
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
export function frame(
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
export class RawWs {
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
