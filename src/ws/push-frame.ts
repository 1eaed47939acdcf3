/**
 * Push frames built once per event. Every subscription id has the same length, so every
 * subscriber's push of one event is the same WebSocket frame except for the id's bytes: the frame
 * (header, envelope, result) is encoded once, and a subscriber's copy only patches its id in.
 * Server-to-client frames are unmasked (RFC 6455 5.1), which is what makes the bytes shareable.
 */

/** `0x` and 32 hex digits (16 random bytes). */
export const SUBSCRIPTION_ID_LENGTH = 34

const BEFORE_ID = '{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"'
const AFTER_ID = '","result":'
const PLACEHOLDER_ID = `0x${'0'.repeat(SUBSCRIPTION_ID_LENGTH - 2)}`

/** FIN + text opcode, then the payload length in 1, 3 or 9 bytes; no mask. */
function frameHeader(payloadLength: number): Buffer {
  if (payloadLength < 126) return Buffer.from([0x81, payloadLength])
  if (payloadLength < 0x10000) return Buffer.from([0x81, 126, payloadLength >> 8, payloadLength & 0xff])
  const h = Buffer.alloc(10)
  h[0] = 0x81
  h[1] = 127
  h.writeBigUInt64BE(BigInt(payloadLength), 2)
  return h
}

/** A subscription id as the bytes a push patches in (checked once, at subscribe time). */
export function subscriptionIdBytes(id: string): Buffer {
  const bytes = Buffer.from(id, 'latin1')
  if (bytes.length !== SUBSCRIPTION_ID_LENGTH || !/^0x[0-9a-f]+$/.test(id)) {
    throw new Error(`subscription ids are 0x and ${SUBSCRIPTION_ID_LENGTH - 2} lowercase hex digits`)
  }
  return bytes
}

/** Where a push frame goes: the subscriber's upgraded socket. */
export interface FrameSink {
  write(chunk: Buffer): unknown
  /** Bytes queued in the stream, not yet handed to the kernel. */
  readonly writableLength: number
}

/** One event's `result`, shared by every subscriber of the event. */
export class PushPayload {
  private template: Buffer | undefined
  /** The frame patched in place for one subscriber after another while no socket holds it. */
  private scratch: Buffer | undefined
  private idOffset = 0
  private messageBytes = 0

  constructor(readonly json: string) {}

  /** Bytes of the message (the JSON envelope without the frame header): what push CU are charged on. */
  get bytes(): number {
    this.build()
    return this.messageBytes
  }

  /** Bytes the frame adds to a socket's send buffer. */
  get frameBytes(): number {
    return this.build().length
  }

  /**
   * Writes the frame with `id` patched in. A write the kernel takes whole is done with the
   * bytes when `write` returns, so the next subscriber's frame reuses the same buffer: no
   * allocation or full copy per subscriber. A socket that queues the frame keeps that buffer
   * (its writableLength shows it), so the next subscriber starts from a fresh copy.
   */
  writeTo(socket: FrameSink, id: Buffer): void {
    const template = this.build()
    if (!this.scratch) {
      this.scratch = Buffer.allocUnsafe(template.length)
      template.copy(this.scratch, 0)
    }
    const frame = this.scratch
    id.copy(frame, this.idOffset)
    socket.write(frame)
    if (socket.writableLength > 0) this.scratch = undefined
  }

  private build(): Buffer {
    if (this.template) return this.template
    const body = Buffer.from(`${BEFORE_ID}${PLACEHOLDER_ID}${AFTER_ID}${this.json}}}`)
    const header = frameHeader(body.length)
    this.template = Buffer.concat([header, body])
    this.idOffset = header.length + BEFORE_ID.length
    this.messageBytes = body.length
    return this.template
  }
}
