import { existsSync, mkdirSync, renameSync } from 'node:fs'
import path from 'node:path'
import { encodeDeployData, encodeFunctionData } from 'viem'
import { type AnvilProcess, startAnvil } from '../../src/devnet/anvil.ts'
import { DEV_ACCOUNT } from '../../src/devnet/demo.ts'
import { compileSol } from '../../src/devnet/demo-contracts/compile.ts'
import { halyardCacheDir } from '../../src/storage/pglite-datadir.ts'
import type { Address, Hex } from '../../src/types.ts'

/**
 * bench:index's chain: anvil with automine off, each block mined by evm_mine after a JSON-RPC
 * batch of transactions shaped like a mainnet block (per block ≈ 300 ERC-20 Transfer logs,
 * 200 other logs, 20 internal value transfers, 170 transactions). The chain is cached with
 * anvil's --state (dumped on exit, loaded on start) under ~/.cache/halyard/bench-index, keyed
 * by its shape, so a rerun starts in seconds.
 */
export interface ChainShape {
  blocks: number
  txsPerBlock: number
  transfersPerBlock: number
  otherLogsPerBlock: number
  internalPerBlock: number
}

const SPRAY_TXS = 10
const NOTE_TXS = 10
const PAY_TXS = 2
/** Loading a cached chain of a thousand dense blocks takes a while on a busy machine. */
const LOAD_MS = 600_000
const ANVIL_ARGS = ['--gas-limit', '1000000000', '--no-mining', '--order', 'fifo']

export interface BenchChain {
  anvil: AnvilProcess
  head: bigint
  generatedMs: number | undefined
}

async function rpc<T>(url: string, body: unknown): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const out = (await res.json()) as T
  const list = Array.isArray(out) ? out : [out]
  for (const r of list as { error?: { message: string } }[])
    if (r.error) throw new Error(`anvil: ${r.error.message}`)
  return out
}

const call = async <T>(url: string, method: string, params: unknown[] = []) =>
  (await rpc<{ result: T }>(url, { jsonrpc: '2.0', id: 1, method, params })).result

export async function benchChain(shape: ChainShape): Promise<BenchChain> {
  const key = `b${shape.blocks}-t${shape.txsPerBlock}-e${shape.transfersPerBlock}-n${shape.otherLogsPerBlock}-i${shape.internalPerBlock}-v1`
  const dir = path.join(halyardCacheDir(), 'bench-index')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const file = path.join(dir, `${key}.json`)
  if (existsSync(file)) {
    const anvil = await startAnvil({
      extraArgs: [...ANVIL_ARGS, '--load-state', file],
      startTimeoutMs: LOAD_MS,
    })
    const head = BigInt(await call<string>(anvil.url, 'eth_blockNumber'))
    if (head >= BigInt(shape.blocks)) return { anvil, head, generatedMs: undefined }
    await anvil.stop()
  }
  const partial = `${file}.${process.pid}.tmp`
  const anvil = await startAnvil({ extraArgs: [...ANVIL_ARGS, '--dump-state', partial] })
  const t0 = performance.now()
  await generate(anvil.url, shape)
  const generatedMs = performance.now() - t0
  const head = BigInt(await call<string>(anvil.url, 'eth_blockNumber'))
  // anvil dumps its state on exit: the cache file is complete once it has stopped.
  const stop = async () => {
    await anvil.stop()
    if (existsSync(partial)) renameSync(partial, file)
  }
  return { anvil: { ...anvil, stop }, head, generatedMs }
}

async function generate(url: string, shape: ChainShape): Promise<void> {
  const art = compileSol('../../../bench/contracts/BenchLoad.sol')
  const emitter = art.BenchEmitter
  const payer = art.BenchPayer
  if (!emitter || !payer) throw new Error('BenchLoad.sol did not compile')
  let nonce = BigInt(await call<string>(url, 'eth_getTransactionCount', [DEV_ACCOUNT, 'pending']))
  const tx = (fields: Record<string, string>) => ({
    jsonrpc: '2.0',
    id: Number(nonce),
    method: 'eth_sendTransaction',
    params: [{ from: DEV_ACCOUNT, nonce: `0x${(nonce++).toString(16)}`, gasPrice: '0x3b9aca00', ...fields }],
  })
  const deploy = [
    tx({ data: encodeDeployData({ abi: emitter.abi, bytecode: emitter.bytecode }), gas: '0x200000' }),
    tx({ data: encodeDeployData({ abi: emitter.abi, bytecode: emitter.bytecode }), gas: '0x200000' }),
    tx({ data: encodeDeployData({ abi: payer.abi, bytecode: payer.bytecode }), gas: '0x200000' }),
  ]
  const hashes = await rpc<{ result: Hex }[]>(url, deploy)
  await call(url, 'evm_mine')
  const created: Address[] = []
  for (const h of hashes) {
    const r = await call<{ contractAddress: Address }>(url, 'eth_getTransactionReceipt', [h.result])
    created.push(r.contractAddress)
  }
  const [tokenA, tokenB, pay] = created as [Address, Address, Address]
  const perSpray = Math.ceil(shape.transfersPerBlock / SPRAY_TXS)
  const perNote = Math.ceil(shape.otherLogsPerBlock / NOTE_TXS)
  const perPay = Math.ceil(shape.internalPerBlock / PAY_TXS)
  const plain = Math.max(0, shape.txsPerBlock - SPRAY_TXS - NOTE_TXS - PAY_TXS)
  let seed = 0x1000n
  const addr = (n: bigint) => `0x${n.toString(16).padStart(40, '0')}` as Address
  // Block 1 holds the deployments; blocks 2..shape.blocks the load.
  for (let b = 2; b <= shape.blocks; b++) {
    const batch: unknown[] = []
    for (let i = 0; i < SPRAY_TXS; i++) {
      const data = encodeFunctionData({
        abi: emitter.abi,
        functionName: 'spray',
        args: [seed, BigInt(perSpray)],
      })
      seed += 7n
      batch.push(tx({ to: i % 2 ? tokenA : tokenB, data, gas: '0x100000' }))
    }
    for (let i = 0; i < NOTE_TXS; i++) {
      const data = encodeFunctionData({
        abi: emitter.abi,
        functionName: 'notes',
        args: [seed, BigInt(perNote)],
      })
      seed += 3n
      batch.push(tx({ to: tokenA, data, gas: '0x100000' }))
    }
    for (let i = 0; i < PAY_TXS; i++) {
      const to = Array.from({ length: perPay }, (_, k) => addr(seed + BigInt(k)))
      seed += BigInt(perPay)
      const data = encodeFunctionData({ abi: payer.abi, functionName: 'pay', args: [to] })
      batch.push(tx({ to: pay, data, gas: '0x100000', value: `0x${(1000n * BigInt(perPay)).toString(16)}` }))
    }
    for (let i = 0; i < plain; i++) {
      batch.push(tx({ to: addr(seed++), gas: '0x5208', value: '0x1' }))
    }
    await rpc(url, batch)
    await call(url, 'evm_mine')
    if (b % 100 === 0) process.stdout.write(`  generated ${b}/${shape.blocks} blocks\r`)
  }
  process.stdout.write('\n')
}
