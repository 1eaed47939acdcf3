/**
 * bench:index's floor: a bare parallel fetcher (global fetch, i.e. undici; 16 requests in
 * flight) reading what an indexer must read of each block — the block with full transactions,
 * its receipts (eth_getBlockReceipts) and its logs (eth_getLogs over ranges) — parsing the JSON
 * and nothing else. Halyard cannot index faster than this from the same node.
 */
export interface FloorResult {
  ms: number
  requests: number
  bytes: number
  txs: number
  logs: number
}

const CONCURRENCY = 16
const LOG_RANGE = 10

export async function floorFetch(url: string, from: bigint, to: bigint): Promise<FloorResult> {
  const jobs: { method: string; params: unknown[] }[] = []
  for (let n = from; n <= to; n++) {
    const tag = `0x${n.toString(16)}`
    jobs.push({ method: 'eth_getBlockByNumber', params: [tag, true] })
    jobs.push({ method: 'eth_getBlockReceipts', params: [tag] })
  }
  for (let n = from; n <= to; n += BigInt(LOG_RANGE)) {
    const end = n + BigInt(LOG_RANGE) - 1n < to ? n + BigInt(LOG_RANGE) - 1n : to
    jobs.push({
      method: 'eth_getLogs',
      params: [{ fromBlock: `0x${n.toString(16)}`, toBlock: `0x${end.toString(16)}` }],
    })
  }
  const out: FloorResult = { ms: 0, requests: 0, bytes: 0, txs: 0, logs: 0 }
  let next = 0
  const worker = async () => {
    while (next < jobs.length) {
      const job = jobs[next++] as (typeof jobs)[number]
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...job }),
      })
      const text = await res.text()
      out.requests++
      out.bytes += text.length
      const body = JSON.parse(text) as { result?: unknown; error?: { message: string } }
      if (body.error) throw new Error(`${job.method}: ${body.error.message}`)
      if (job.method === 'eth_getBlockByNumber')
        out.txs += (body.result as { transactions: unknown[] }).transactions.length
      else if (job.method === 'eth_getLogs') out.logs += (body.result as unknown[]).length
    }
  }
  const t0 = performance.now()
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  out.ms = performance.now() - t0
  return out
}
