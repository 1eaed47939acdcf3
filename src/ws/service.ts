import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { type WebSocket, WebSocketServer } from 'ws'
import type { AuthService, Caller } from '../auth/service.ts'
import type { Network, NetworkRegistry } from '../chains/registry.ts'
import { HalyardError, invalidRequest } from '../errors.ts'
import { type Charger, rateLimitHeaders } from '../http/charge.ts'
import type { ClientAddress } from '../http/peer.ts'
import type { LimitDecision } from '../limits/limiter.ts'
import { wsLimitsFor } from '../limits/plans.ts'
import type { Logger } from '../logger.ts'
import type { Metrics } from '../metrics.ts'
import type { RpcService } from '../rpc/service.ts'
import { CLOSE_GOING_AWAY, CLOSE_POLICY, ClientConnection } from './connection.ts'
import { NetworkStreams, type StreamOptions } from './network-streams.ts'
import { HALYARD_WS, type WsSurface } from './surface.ts'
import { authorizeUpgrade, refuseUpgrade } from './upgrade.ts'

/**
 * Subscription pushes are charged by size: 1 CU per this many bytes delivered (Alchemy's
 * 0.04 CU per byte on Halyard's ten-times-smaller scale). `eth_subscribe` itself costs its
 * registry row (src/rpc/methods/evm.ts).
 */
export const PUSH_BYTES_PER_CU = 250

export interface WsOptions extends StreamOptions {
  /** A client with more than this many bytes waiting to be sent is closed (1008). */
  readonly sendBufferBytes: number
  /** Largest message a client may send (ws closes with 1009 above it). */
  readonly maxPayloadBytes: number
  readonly maxInFlight: number
  /** Server → client pings this often; a client silent for a whole period is dropped. */
  readonly clientPingMs: number
  /** On shutdown, clients get this long to complete the close handshake. */
  readonly shutdownGraceMs: number
  /** Push compute units are summed per account and charged this often. */
  readonly pushChargeIntervalMs: number
  /**
   * Every open connection's key is re-read this often (once per distinct key): a revoked key's
   * sockets close with 1008, scope and plan changes apply to later messages.
   */
  readonly revalidateMs: number
}

export const DEFAULT_WS_OPTIONS: WsOptions = {
  pollIntervalMs: 1_000,
  pingIntervalMs: 15_000,
  backoffMinMs: 100,
  backoffMaxMs: 10_000,
  requestTimeoutMs: 10_000,
  syncPollMs: 5_000,
  keepBlocks: 256,
  maxBackfill: 1_024,
  sendBufferBytes: 512 * 1024,
  maxPayloadBytes: 1024 * 1024,
  maxInFlight: 64,
  clientPingMs: 30_000,
  shutdownGraceMs: 1_000,
  pushChargeIntervalMs: 1_000,
  revalidateMs: 1_000,
}

/** Push CU owed for an account, carried for at most this many seconds of its CU/s budget. */
const MAX_DEBT_SECONDS = 10

export interface WsServiceDeps {
  readonly auth: AuthService
  readonly networks: NetworkRegistry
  /** The client's address for a key's allowed-IPs list (http/peer.ts). */
  readonly clientAddress: ClientAddress
  readonly rpc: RpcService
  readonly charger: Charger
  readonly logger: Logger
  readonly metrics?: Metrics
}

/**
 * The WebSocket endpoint: authorises upgrades, holds the client connections and the
 * per-network upstream streams, enforces per-account connection limits, charges push compute
 * units, and closes everything with 1001 on shutdown.
 */
export class WsService {
  private readonly wss: WebSocketServer
  private readonly streams = new Map<string, NetworkStreams>()
  private readonly connections = new Map<WebSocket, ClientConnection>()
  /** Open connections by the key they presented: revalidation reads each key once. */
  private readonly byKey = new Map<string, Set<ClientConnection>>()
  private revalidating: Promise<void> | undefined
  private readonly perAccount = new Map<string, number>()
  private readonly pushDebt = new Map<string, { caller: Caller; bytes: number }>()
  private readonly decisions = new WeakMap<IncomingMessage, LimitDecision>()
  private readonly surfaceOf = new WeakMap<IncomingMessage, WsSurface>()
  private readonly surfaces: WsSurface[] = [HALYARD_WS]
  private readonly alive = new WeakSet<WebSocket>()
  private readonly timers: NodeJS.Timeout[] = []
  private shuttingDown: Promise<void> | undefined
  private charging: Promise<void> | undefined
  private opts: WsOptions
  /** Observations for tests and benchmarks. */
  readonly stats = {
    slowClosed: 0,
    maxBuffered: 0,
    pushComputeUnits: 0,
    revalidations: 0,
    keysRechecked: 0,
    revokedClosed: 0,
  }

  constructor(
    private readonly deps: WsServiceDeps,
    options: Partial<WsOptions> = {},
  ) {
    this.opts = { ...DEFAULT_WS_OPTIONS, ...options }
    this.wss = new WebSocketServer({
      noServer: true,
      // Compression would cost CPU and memory per client; heads are small.
      perMessageDeflate: false,
      clientTracking: false,
      maxPayload: this.opts.maxPayloadBytes,
      // Each surface picks the subprotocol it echoes (alchemy-sdk fails without its own).
      handleProtocols: (offered, req) => {
        const choose = this.surfaceOf.get(req)?.protocol
        return choose ? choose(offered) : (offered.values().next().value ?? false)
      },
    })
    // Anything the ws library still refuses during the handshake gets the error body too
    // (with this listener it writes no answer of its own).
    this.wss.on('wsClientError', (err, socket) => refuseUpgrade(socket, invalidRequest(err.message)))
    this.wss.on('headers', (headers, req) => {
      const d = this.decisions.get(req)
      if (d) for (const [k, v] of Object.entries(rateLimitHeaders(d))) headers.push(`${k}: ${v}`)
    })
    this.timers.push(setInterval(() => void this.chargePushes(), this.opts.pushChargeIntervalMs))
    this.timers.push(setInterval(() => this.pingClients(), this.opts.clientPingMs))
    // One timer for every connection: the pass reads each distinct key once.
    this.timers.push(setInterval(() => void this.revalidateAll(), this.opts.revalidateMs))
    for (const t of this.timers) t.unref()
  }

  get options(): WsOptions {
    return this.opts
  }

  /** Adjusts limits and timings for streams and connections created after the call (tests, bench). */
  tune(options: Partial<WsOptions>): void {
    this.opts = { ...this.opts, ...options }
  }

  /** Accepts upgrades on another URL family too (a feature's root, e.g. the Alchemy-compatible one). */
  addSurface(surface: WsSurface): void {
    this.surfaces.push(surface)
  }

  connectionCount(): number {
    return this.connections.size
  }

  /** Distinct keys among the open connections (each is re-read once per revalidation pass). */
  keyCount(): number {
    return this.byKey.size
  }

  streamsFor(network: Network): NetworkStreams {
    let s = this.streams.get(network.slug)
    if (!s) {
      s = new NetworkStreams(network, this.opts, this.deps.logger, this.deps.metrics)
      this.streams.set(network.slug, s)
    }
    return s
  }

  /** The HTTP server's 'upgrade' event: everything is checked before the handshake completes. */
  async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => {})
    if (this.shuttingDown) {
      socket.destroy()
      return
    }
    let decision: LimitDecision | undefined
    let reserved: string | undefined
    try {
      const { caller, network, surface, key } = await authorizeUpgrade(req, {
        ...this.deps,
        surfaces: this.surfaces,
      })
      const limits = wsLimitsFor(caller.plan)
      const open = this.perAccount.get(caller.accountId) ?? 0
      if (limits.connectionsPerAccount !== null && open >= limits.connectionsPerAccount) {
        throw new HalyardError(
          'rate_limited',
          `connection limit: at most ${limits.connectionsPerAccount} concurrent WebSocket connections per account on the ${caller.plan} plan`,
          { 'retry-after': '1' },
        )
      }
      // Reserved before any await, so concurrent upgrades cannot overshoot the limit.
      reserved = caller.accountId
      this.perAccount.set(reserved, open + 1)
      const charged = await this.deps.charger.chargeCaller(caller, 0, 1, 'ws connect')
      decision = charged.decision
      if (charged.refusal) throw charged.refusal
      if (socket.destroyed || this.shuttingDown)
        throw new HalyardError('invalid_request', 'connection closed')
      this.decisions.set(req, decision)
      this.surfaceOf.set(req, surface)
      const account = reserved
      // From here the socket's close releases the slot (also when the handshake fails).
      reserved = undefined
      socket.once('close', () => this.release(account))
      this.wss.handleUpgrade(req, socket, head, (ws) =>
        this.accept(ws, socket, caller, network, surface, key),
      )
    } catch (err) {
      if (reserved) this.release(reserved)
      if (!(err instanceof HalyardError) || err.status >= 500) {
        this.deps.logger.error({ err }, 'websocket upgrade failed')
      }
      refuseUpgrade(socket, err, decision)
    }
  }

  async shutdown(): Promise<void> {
    this.shuttingDown ??= this.closeAll()
    return this.shuttingDown
  }

  private async closeAll(): Promise<void> {
    for (const t of this.timers) clearInterval(t)
    const sockets = [...this.connections.keys()]
    for (const conn of this.connections.values()) conn.close(CLOSE_GOING_AWAY, 'server shutting down')
    await Promise.race([
      Promise.all(
        sockets.map(
          (ws) => new Promise((r) => (ws.readyState === ws.CLOSED ? r(null) : ws.once('close', r))),
        ),
      ),
      new Promise((r) => setTimeout(r, this.opts.shutdownGraceMs).unref()),
    ])
    for (const ws of sockets) ws.terminate()
    await Promise.all([...this.streams.values()].map((s) => s.close()))
    // A pass under way may have passed accounts that pushed since: run a full one after it.
    await this.charging
    await this.chargePushes()
    this.wss.close()
  }

  private accept(
    ws: WebSocket,
    socket: Duplex,
    caller: Caller,
    network: Network,
    surface: WsSurface,
    key: string,
  ): void {
    const streams = this.streamsFor(network)
    const conn = new ClientConnection(
      { ws, socket, caller, network },
      {
        ...(surface.registry ? { registry: surface.registry } : {}),
        alchemyKinds: surface.alchemyKinds ?? false,
        rpc: this.deps.rpc,
        charger: this.deps.charger,
        streams,
        wsLimits: wsLimitsFor(caller.plan),
        sendBufferBytes: this.opts.sendBufferBytes,
        maxInFlight: this.opts.maxInFlight,
        recordPush: (c, bytes) => this.recordPush(c, bytes),
        observeBuffered: (bytes) => {
          if (bytes > this.stats.maxBuffered) this.stats.maxBuffered = bytes
        },
        onSlowClose: () => {
          this.stats.slowClosed++
          this.deps.metrics?.wsSlowClients.inc({ network: network.slug })
          this.deps.logger.warn(
            { account: caller.accountId, network: network.slug },
            'closed a slow websocket client',
          )
        },
      },
    )
    this.connections.set(ws, conn)
    const sharing = this.byKey.get(key) ?? new Set<ClientConnection>()
    this.byKey.set(key, sharing)
    sharing.add(conn)
    this.alive.add(ws)
    this.deps.metrics?.wsConnections.inc({ network: network.slug })
    ws.on('message', (data) => {
      this.alive.add(ws)
      conn.onMessage(data.toString()).catch((err) => {
        this.deps.logger.error({ err }, 'websocket message handling failed')
      })
    })
    ws.on('pong', () => this.alive.add(ws))
    ws.on('error', () => {})
    ws.on('close', () => {
      conn.dispose()
      this.connections.delete(ws)
      sharing.delete(conn)
      if (sharing.size === 0 && this.byKey.get(key) === sharing) this.byKey.delete(key)
      this.deps.metrics?.wsConnections.dec({ network: network.slug })
    })
    if (this.shuttingDown) conn.close(CLOSE_GOING_AWAY, 'server shutting down')
  }

  /**
   * Re-reads the key of every open connection, once per distinct key (auth/service.ts `recheck`:
   * cached for under a second, so at most one database read per key per pass, on every
   * instance). A revoked key's connections close with 1008; the others take the key's current
   * scopes and plan. A pass still running when the next is due is not doubled.
   */
  revalidateAll(): Promise<void> {
    this.revalidating ??= this.revalidateKeys().finally(() => {
      this.revalidating = undefined
    })
    return this.revalidating
  }

  private async revalidateKeys(): Promise<void> {
    const keys = [...this.byKey]
    this.stats.keysRechecked += keys.length
    await Promise.all(
      keys.map(async ([key, conns]) => {
        const caller = await this.deps.auth.recheck(key)
        if (caller === undefined) return
        for (const conn of [...conns]) {
          if (caller === null) {
            this.stats.revokedClosed++
            conn.close(CLOSE_POLICY, 'the API key was revoked')
          } else conn.revalidate(caller, wsLimitsFor(caller.plan))
        }
      }),
    )
    this.stats.revalidations++
  }

  private release(accountId: string): void {
    const n = (this.perAccount.get(accountId) ?? 1) - 1
    if (n <= 0) this.perAccount.delete(accountId)
    else this.perAccount.set(accountId, n)
  }

  private pingClients(): void {
    for (const ws of this.connections.keys()) {
      if (!this.alive.has(ws)) {
        ws.terminate()
        continue
      }
      this.alive.delete(ws)
      ws.ping()
    }
  }

  private recordPush(caller: Caller, bytes: number): void {
    const debt = this.pushDebt.get(caller.accountId)
    if (debt) {
      debt.bytes += bytes
      // The latest caller: a plan change since the connection opened sets the budget.
      debt.caller = caller
    } else this.pushDebt.set(caller.accountId, { caller, bytes })
  }

  /**
   * Pushes are never dropped for compute units (that would break "every block once"); their CU
   * is charged once per interval per account instead, so a heavy stream uses up the budget the
   * account's other calls draw on. Debt beyond the plan's budget for a few seconds is forgiven.
   */
  private chargePushes(): Promise<void> {
    // A slow limiter store must not let two passes charge the same debt.
    this.charging ??= this.chargeDebts().finally(() => {
      this.charging = undefined
    })
    return this.charging
  }

  private async chargeDebts(): Promise<void> {
    for (const [account, debt] of this.pushDebt) {
      const cu = Math.floor(debt.bytes / PUSH_BYTES_PER_CU)
      if (cu === 0) {
        if (!this.perAccount.has(account)) this.pushDebt.delete(account)
        continue
      }
      const budget = debt.caller.limits.computeUnitsPerSecond
      const amount = budget === null ? cu : Math.min(cu, budget)
      try {
        const { refusal } = await this.deps.charger.chargeCaller(debt.caller, amount, 0, 'ws push')
        if (!refusal) {
          debt.bytes -= amount * PUSH_BYTES_PER_CU
          this.stats.pushComputeUnits += amount
        }
      } catch (err) {
        this.deps.logger.warn({ err: (err as Error).message }, 'could not charge push compute units')
      }
      if (budget !== null) debt.bytes = Math.min(debt.bytes, budget * MAX_DEBT_SECONDS * PUSH_BYTES_PER_CU)
    }
  }
}
