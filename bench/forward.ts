/**
 * npm run bench:forward — what the gateway spends on a forwarded answer's result, before and
 * after it kept the node's bytes (docs/gateway.md, "Results are forwarded as the node's bytes"):
 * parsing the node's answer and encoding the result again (the old path, and still the path of
 * any answer not in the common frame) against finding the result's extent in the text
 * (src/chains/raw-answer.ts). Three sizes: a balance, a block header, a mainnet-sized block with
 * 170 full transactions (~135 KiB). In-process and CPU-only; the best of BENCH_ROUNDS rounds
 * (default 5) per row, so a busy neighbour does not decide it.
 */
import { rawResultText } from '../src/chains/raw-answer.ts'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)

const hex = (byte: string, n: number) => `0x${byte.repeat(n)}`
const tx = (i: number) => ({
  type: '0x2',
  chainId: '0x1',
  nonce: `0x${i.toString(16)}`,
  gas: '0x5208',
  maxFeePerGas: '0x6fc4e658',
  maxPriorityFeePerGas: '0x3b9aca00',
  to: hex('aa', 20),
  value: '0xde0b6b3a7640000',
  accessList: [],
  input: hex('ab', 68),
  r: hex('d8', 32),
  s: hex('6d', 32),
  yParity: '0x1',
  v: '0x1',
  hash: `0x${i.toString(16).padStart(64, '0')}`,
  blockHash: hex('f3', 32),
  blockNumber: '0x1234567',
  transactionIndex: `0x${i.toString(16)}`,
  from: hex('f3', 20),
  gasPrice: '0x6fc4e658',
})
const header = {
  number: '0x1234567',
  hash: hex('ab', 32),
  parentHash: hex('cd', 32),
  logsBloom: hex('00', 256),
}
const answers: [string, unknown][] = [
  ['eth_getBalance', '0x1bc16d674ec80000'],
  ['eth_getBlockByNumber (header)', { ...header, transactions: [] }],
  [
    'eth_getBlockByNumber (170 full transactions)',
    { ...header, transactions: Array.from({ length: 170 }, (_, i) => tx(i)) },
  ],
]

/** Mean µs per call of `f` over enough calls to take ~200 ms, best of ROUNDS. */
function time(f: () => unknown): number {
  let n = 1
  const start = performance.now()
  while (performance.now() - start < 20) {
    f()
    n++
  }
  const calls = Math.max(50, n * 10)
  let best = Number.POSITIVE_INFINITY
  for (let r = 0; r < ROUNDS; r++) {
    const t = performance.now()
    for (let i = 0; i < calls; i++) f()
    best = Math.min(best, ((performance.now() - t) * 1000) / calls)
  }
  return best
}

console.log('bench:forward — a forwarded result: parse + re-encode (before) vs the frame scan (now)')
console.log('| answer | size | parse + re-encode µs | frame scan µs | ratio |')
console.log('|---|---:|---:|---:|---:|')
for (const [name, result] of answers) {
  const text = `{"jsonrpc":"2.0","id":7,"result":${JSON.stringify(result)}}`
  if (rawResultText(text, 7) !== JSON.stringify(result))
    throw new Error(`the scan did not find ${name}'s result`)
  const before = time(() => JSON.stringify((JSON.parse(text) as { result: unknown }).result))
  const now = time(() => rawResultText(text, 7))
  const size = text.length < 2048 ? `${text.length} B` : `${(text.length / 1024).toFixed(0)} KiB`
  console.log(
    `| ${name} | ${size} | ${before.toFixed(2)} | ${now.toFixed(2)} | ${(before / now).toFixed(1)}× |`,
  )
}
