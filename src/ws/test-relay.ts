import type { AddressInfo } from 'node:net'
import WebSocket, { WebSocketServer } from 'ws'

/**
 * Test-only: our own small loopback WebSocket relay put in front of anvil. It forwards frames
 * both ways and counts the `eth_subscribe` calls it sees, which is how tests observe the
 * upstream side (anvil itself cannot be asked how many subscriptions it holds). It can drop
 * every connection and refuse new ones, to play a node whose socket dies and comes back.
 */
export class TestWsRelay {
  /** `eth_subscribe` params seen, in order, over every connection. */
  readonly subscribes: unknown[][] = []
  connectionsAccepted = 0
  private accepting = true
  private frozen = false
  private readonly pairs = new Set<{ client: WebSocket; upstream: WebSocket }>()

  private constructor(
    private readonly server: WebSocketServer,
    private readonly target: string,
  ) {
    server.on('connection', (client) => this.pipe(client))
  }

  static async start(target: string): Promise<TestWsRelay> {
    const server = new WebSocketServer({
      host: '127.0.0.1',
      port: 0,
      perMessageDeflate: false,
      // Pongs are answered by hand, so that freeze() can play a node that hangs silently.
      autoPong: false,
      verifyClient: (_info, cb) => cb(relay.accepting, 503, 'relay refusing connections'),
    })
    const relay: TestWsRelay = new TestWsRelay(server, target)
    await new Promise<void>((resolve) => server.once('listening', () => resolve()))
    return relay
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  /** How many `eth_subscribe` calls asked for this kind. */
  count(kind: string): number {
    return this.subscribes.filter((p) => p[0] === kind).length
  }

  get openConnections(): number {
    return this.pairs.size
  }

  setAccepting(accepting: boolean): void {
    this.accepting = accepting
    if (accepting) this.frozen = false
  }

  /**
   * Connections stay open but nothing moves: no frames either way and no pongs, as with a node
   * that hangs. Only keep-alive pings can tell.
   */
  freeze(): void {
    this.frozen = true
  }

  /** Kills every relayed connection abruptly (no close frame), as a crashing node would. */
  dropAll(): void {
    for (const p of this.pairs) {
      p.client.terminate()
      p.upstream.terminate()
    }
    this.pairs.clear()
  }

  async close(): Promise<void> {
    this.dropAll()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private pipe(client: WebSocket): void {
    this.connectionsAccepted++
    const upstream = new WebSocket(this.target, { perMessageDeflate: false })
    const pair = { client, upstream }
    this.pairs.add(pair)
    const early: string[] = []
    client.on('ping', (data) => {
      if (!this.frozen) client.pong(data)
    })
    client.on('message', (data) => {
      if (this.frozen) return
      const text = data.toString()
      try {
        const msg = JSON.parse(text) as { method?: unknown; params?: unknown }
        if (msg.method === 'eth_subscribe' && Array.isArray(msg.params)) this.subscribes.push(msg.params)
      } catch {}
      if (upstream.readyState === WebSocket.OPEN) upstream.send(text)
      else early.push(text)
    })
    upstream.on('open', () => {
      for (const t of early.splice(0)) upstream.send(t)
    })
    upstream.on('message', (data) => {
      if (this.frozen) return
      if (client.readyState === WebSocket.OPEN) client.send(data.toString())
    })
    const end = () => {
      this.pairs.delete(pair)
      client.terminate()
      upstream.terminate()
    }
    client.on('close', end)
    upstream.on('close', end)
    client.on('error', end)
    upstream.on('error', end)
  }
}
