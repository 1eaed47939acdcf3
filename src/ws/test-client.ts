import WebSocket from 'ws'
import { until } from '../../test/helpers/until.ts'

/** Test-only helpers: a raw JSON-RPC WebSocket client, anvil calls, and polling waits. */

export { until }

export type Json = Record<string, unknown>

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The answer to a refused upgrade: HTTP status and JSON body. */
export function refusedUpgrade(
  url: string,
  headers?: Record<string, string>,
): Promise<{ status: number; body: Json; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, headers ? { headers } : undefined)
    ws.on('open', () => {
      ws.close()
      reject(new Error('the upgrade was accepted'))
    })
    ws.on('unexpected-response', (_req, res) => {
      let text = ''
      res.on('data', (c: Buffer) => {
        text += c.toString()
      })
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Json, headers: res.headers }),
      )
    })
    ws.on('error', () => {})
  })
}

export class RawClient {
  readonly frames: Json[] = []
  readonly pushes = new Map<string, Json[]>()
  closed: { code: number; reason: string } | undefined
  private nextId = 1

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString()) as Json | Json[]
      for (const m of Array.isArray(msg) ? msg : [msg]) {
        this.frames.push(m)
        if (m.method === 'eth_subscription') {
          const p = m.params as { subscription: string; result: Json }
          const list = this.pushes.get(p.subscription) ?? []
          list.push(p.result)
          this.pushes.set(p.subscription, list)
        }
      }
    })
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() }
    })
    ws.on('error', () => {})
  }

  static open(url: string, headers?: Record<string, string>): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false, ...(headers ? { headers } : {}) })
      ws.once('open', () => resolve(new RawClient(ws)))
      ws.once('unexpected-response', (_req, res) =>
        reject(new Error(`upgrade refused with ${res.statusCode}`)),
      )
      ws.once('error', reject)
    })
  }

  send(text: string): void {
    this.ws.send(text)
  }

  /** Sends one call and resolves with its whole reply frame. */
  async call(method: string, params: unknown[] = []): Promise<Json> {
    const id = this.nextId++
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }))
    return until(`reply to ${method}`, () => this.frames.find((f) => f.id === id))
  }

  async subscribe(kind: string, filter?: unknown): Promise<string> {
    const reply = await this.call('eth_subscribe', filter === undefined ? [kind] : [kind, filter])
    if (typeof reply.result !== 'string') throw new Error(`subscribe failed: ${JSON.stringify(reply.error)}`)
    return reply.result
  }

  pushesOf(sub: string): Json[] {
    return this.pushes.get(sub) ?? []
  }

  close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve()
    return new Promise((resolve) => {
      this.ws.once('close', () => resolve())
      this.ws.close()
    })
  }
}

/** anvil's first dev account (unlocked: eth_sendTransaction works against anvil directly). */
export const DEV_ACCOUNT = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266'
export const EMITTER = '0x00000000000000000000000000000000000e3177'
export const EMITTER_TOPIC = `0x${'ab'.repeat(32)}`
/**
 * Runtime code that emits LOG1(EMITTER_TOPIC) with the calldata as data:
 * CALLDATACOPY(0, 0, CALLDATASIZE); LOG1(0, CALLDATASIZE, topic); STOP.
 */
const EMITTER_CODE = `0x3660006000377f${'ab'.repeat(32)}366000a100`

export class AnvilControl {
  constructor(private readonly url: string) {}

  async rpc(method: string, params: unknown[] = []): Promise<unknown> {
    const res = await fetch(this.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    })
    const body = (await res.json()) as { result?: unknown; error?: { message: string } }
    if (body.error) throw new Error(`${method}: ${body.error.message}`)
    return body.result
  }

  async mine(blocks = 1): Promise<void> {
    if (blocks === 1) await this.rpc('evm_mine')
    else await this.rpc('anvil_mine', [`0x${blocks.toString(16)}`])
  }

  async head(): Promise<number> {
    return Number(await this.rpc('eth_blockNumber'))
  }

  installEmitter(): Promise<unknown> {
    return this.rpc('anvil_setCode', [EMITTER, EMITTER_CODE])
  }

  /** A transaction to the emitter (mined at once by anvil's automine); returns its hash. */
  async emit(data: string): Promise<string> {
    return (await this.rpc('eth_sendTransaction', [
      { from: DEV_ACCOUNT, to: EMITTER, data, gas: '0x100000' },
    ])) as string
  }
}

/** Block numbers of newHeads pushes, as numbers. */
export function numbers(pushes: Json[]): number[] {
  return pushes.map((p) => Number(p.number as string))
}

/** Whether the numbers run first, first+1, …, last with no gap and no repeat. */
export function isConsecutive(ns: number[]): boolean {
  return ns.every((n, i) => i === 0 || n === ns[i - 1]! + 1)
}
