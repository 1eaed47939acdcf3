/**
 * The footprint bench's soak: a running Halyard held at a plan's request limit for
 * FOOTPRINT_SOAK_S (600) seconds — paced JSON-RPC calls, each for a new address so caches see
 * distinct keys — while WebSocket clients keep connecting, subscribing (newHeads, logs) and
 * leaving. Every 10 s: the process's RSS and its event-loop delay, read from its own /metrics
 * (prom-client's monitorEventLoopDelay histogram, reset at each scrape, so each sample covers
 * the last 10 s). The summary says whether either grew.
 */
import { WebSocket } from 'ws'
import { sleep } from '../../src/common/time.ts'
import { rssMb } from './footprint-proc.ts'

/** prom-client samples the loop every 10 ms and records the time between samples: the delay is beyond that. */
const SAMPLING_MS = 10
const SAMPLE_EVERY_MS = 10_000
/** WebSocket churn: this many new clients a second, each staying this long. */
const WS_PER_SECOND = 3
const WS_LIFETIME_MS = 20_000

export interface SoakSample {
  atS: number
  rssMb: number
  /** Event-loop delay p99 and max over the last window, ms beyond the sampling interval. */
  loopP99Ms: number
  loopMaxMs: number
  ok: number
  refused: number
  failed: number
  wsOpen: number
}

export interface SoakResult {
  samples: SoakSample[]
  rssAfterFirstMinute: number
  rssEnd: number
  /** rssEnd / rssAfterFirstMinute. */
  growth: number
  worstLoopP99Ms: number
  medianLoopP99Ms: number
  wsConnected: number
  wsFailed: number
}

async function loopDelay(origin: string): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${origin}/metrics`)).text()
  const read = (name: string) => {
    const m = new RegExp(`^halyard_nodejs_eventloop_lag_${name}_seconds(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(
      text,
    )
    return m ? Math.max(0, Number(m[1]) * 1000 - SAMPLING_MS) : Number.NaN
  }
  return { p99: read('p99'), max: read('max') }
}

/** Paced calls at `perSecond`, each its own request; counts answers by kind. */
function pacedRpc(rpcUrl: string, key: string, perSecond: number) {
  const counts = { ok: 0, refused: 0, failed: 0 }
  let n = 0
  let stopped = false
  const tick = () => {
    if (stopped) return
    n++
    const address = `0x${n.toString(16).padStart(40, '0')}`
    fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ jsonrpc: '2.0', id: n, method: 'eth_getBalance', params: [address, 'latest'] }),
    }).then(
      async (res) => {
        await res.arrayBuffer()
        if (res.status === 200) counts.ok++
        else if (res.status === 429) counts.refused++
        else counts.failed++
      },
      () => counts.failed++,
    )
  }
  const timer = setInterval(tick, 1000 / perSecond)
  return {
    counts,
    stop() {
      stopped = true
      clearInterval(timer)
    },
  }
}

/** Clients that connect, subscribe to newHeads and logs, and leave after WS_LIFETIME_MS. */
function wsChurn(wsUrl: string) {
  const live = new Set<WebSocket>()
  const tally = { connected: 0, failed: 0 }
  let stopped = false
  const open = () => {
    const ws = new WebSocket(wsUrl)
    live.add(ws)
    ws.on('open', () => {
      tally.connected++
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }))
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_subscribe', params: ['logs', {}] }))
      setTimeout(() => ws.close(), WS_LIFETIME_MS)
    })
    // Clients still connecting when the soak ends are cut off: not a failure.
    ws.on('error', () => {
      if (!stopped) tally.failed++
    })
    ws.on('close', () => live.delete(ws))
  }
  const timer = setInterval(() => {
    for (let i = 0; i < WS_PER_SECOND; i++) open()
  }, 1000)
  return {
    tally,
    live,
    stop() {
      stopped = true
      clearInterval(timer)
      for (const ws of live) ws.terminate()
    },
  }
}

export async function soak(opts: {
  pid: number
  origin: string
  rpcUrl: string
  wsUrl: string
  key: string
  perSecond: number
  seconds: number
  log: (line: string) => void
}): Promise<SoakResult> {
  await loopDelay(opts.origin) // resets the histogram: the first window starts now
  const rpc = pacedRpc(opts.rpcUrl, opts.key, opts.perSecond)
  const ws = wsChurn(opts.wsUrl)
  const samples: SoakSample[] = []
  const t0 = Date.now()
  try {
    while (Date.now() - t0 < opts.seconds * 1000) {
      await sleep(SAMPLE_EVERY_MS)
      const loop = await loopDelay(opts.origin)
      const sample: SoakSample = {
        atS: Math.round((Date.now() - t0) / 1000),
        rssMb: rssMb(opts.pid) ?? Number.NaN,
        loopP99Ms: loop.p99,
        loopMaxMs: loop.max,
        ...rpc.counts,
        wsOpen: ws.live.size,
      }
      samples.push(sample)
      opts.log(
        `  soak ${String(sample.atS).padStart(4)} s: RSS ${Math.round(sample.rssMb)} MB, event-loop delay p99 ${sample.loopP99Ms.toFixed(1)} ms (max ${sample.loopMaxMs.toFixed(1)}), rpc ${sample.ok} ok / ${sample.refused} 429 / ${sample.failed} failed, ${sample.wsOpen} WebSocket clients`,
      )
    }
  } finally {
    rpc.stop()
    ws.stop()
  }
  const firstMinute = samples.find((s) => s.atS >= 60) ?? samples[0]!
  const end = samples.at(-1)!
  const p99s = samples.map((s) => s.loopP99Ms).sort((a, b) => a - b)
  return {
    samples,
    rssAfterFirstMinute: firstMinute.rssMb,
    rssEnd: end.rssMb,
    growth: end.rssMb / firstMinute.rssMb,
    worstLoopP99Ms: p99s.at(-1)!,
    medianLoopP99Ms: p99s[Math.floor(p99s.length / 2)]!,
    wsConnected: ws.tally.connected,
    wsFailed: ws.tally.failed,
  }
}
