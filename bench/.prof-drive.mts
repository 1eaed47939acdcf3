// Profiling driver: anvil + Halyard server child (with --cpu-prof) + autocannon, then SIGINT.
import { spawn } from 'node:child_process'
import autocannon from 'autocannon'
import { startAnvil } from '../src/devnet/anvil.ts'
const method = process.argv[2] ?? 'eth_blockNumber'
const secs = Number(process.argv[3] ?? 6)
const anvil = await startAnvil()
await fetch(anvil.url, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: ['0xc'] }) })
const child = spawn('node', ['--cpu-prof', '--cpu-prof-dir=/tmp/prof/out', '--import', 'tsx', 'bench/rpc.ts', '--server', anvil.url], { cwd: '/work/main', stdio: ['ignore', 'pipe', 'inherit'] })
const info = await new Promise<{ url: string; key: string }>((res) => {
  let buf = ''
  child.stdout.on('data', (d) => { buf += d; const l = buf.split('\n').find((x) => x.startsWith('{')); if (l) res(JSON.parse(l)) })
})
const body = JSON.stringify(method === 'block' ? { jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: ['0x1', false] } : { jsonrpc: '2.0', id: 1, method, params: [] })
const opts = { url: info.url, method: 'POST' as const, connections: 50, headers: { 'content-type': 'application/json', 'x-api-key': info.key }, body }
await autocannon({ ...opts, duration: 1 })
const r = await autocannon({ ...opts, duration: secs })
console.log(method, r.requests.average, 'req/s p50', r.latency.p50, 'non2xx', r.non2xx, 'errors', r.errors)
child.kill('SIGINT')
await new Promise((r) => child.once('exit', r))
await anvil.stop()
