import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { encodeFunctionData, parseAbi } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { anvilNetwork } from '../../test/helpers/halyard.ts'
import { until } from '../../test/helpers/until.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Address, Hash } from '../types.ts'
import { ManagedPool } from './managed-pool.ts'
import {
  type ChainNode,
  call,
  chainId,
  getBalance,
  getBlock,
  getBlockNumber,
  getCode,
  getLogs,
  getTransaction,
  getTransactionCount,
  getTransactionReceipt,
  hasCode,
  malformedAnswer,
  nodeAnswered,
  nodeError,
} from './reads.ts'
import { UpstreamUnavailableError } from './upstream-unavailable.ts'

/** Anvil's first dev account, unlocked on every fresh anvil. */
const DEV = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266' as Address
const OTHER = '0x70997970c51812dc3a65c01d114dc438bee2b1a7' as Address
/** Runtime code that emits LOG1(topic 0x…01, no data) and returns: a log for eth_getLogs. */
const EMITTER_CODE = '0x7f000000000000000000000000000000000000000000000000000000000000000160006000a100'
const EMITTER = '0x000000000000000000000000000000000000e1e1' as Address
/** Runtime code that always reverts with 4 bytes of data (0xdeadbeef). */
const REVERTER_CODE = '0x63deadbeef6000526004601cfd'
const REVERTER = '0x000000000000000000000000000000000000dead' as Address

async function raw(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  return ((await res.json()) as { result: unknown }).result
}

const close = (s: Server) => new Promise<void>((r) => s.close(() => r()))

describe('chain reads against a real anvil', () => {
  let anvil: AnvilProcess
  let pool: ManagedPool
  let node: ChainNode
  let txHash: Hash

  beforeAll(async () => {
    anvil = await startAnvil()
    pool = new ManagedPool(anvilNetwork(anvil))
    node = { pool, chain: 'ethereum', network: 'devnet' }
    await raw(anvil.url, 'anvil_setCode', [EMITTER, EMITTER_CODE])
    await raw(anvil.url, 'anvil_setCode', [REVERTER, REVERTER_CODE])
    await raw(anvil.url, 'anvil_setBalance', [OTHER, '0x21e19e0c9bab2400000'])
    txHash = (await raw(anvil.url, 'eth_sendTransaction', [
      { from: DEV, to: EMITTER, gas: '0x186a0' },
    ])) as Hash
    // anvil answers eth_sendTransaction with the hash; the block it mines can follow a moment later.
    await until('the transaction mined', () => raw(anvil.url, 'eth_getTransactionReceipt', [txHash]))
  })
  afterAll(async () => {
    await pool?.close()
    await anvil?.stop()
  })

  it('reads the chain id, head, blocks, balances and nonces as bigints and branded hex', async () => {
    expect(await chainId(node)).toBe(31337n)
    const head = await getBlockNumber(node)
    expect(head).toBeGreaterThanOrEqual(1n)
    const block = await getBlock(node, head, true)
    expect(block?.number).toBe(head)
    expect(block?.hash).toMatch(/^0x[0-9a-f]{64}$/)
    const [tx] = block?.transactions ?? []
    expect(typeof tx === 'object' && tx.hash).toBe(txHash)
    expect(await getBlock(node, head + 1000n)).toBeNull()
    expect(await getBalance(node, OTHER)).toBe(10_000n * 10n ** 18n)
    expect(await getTransactionCount(node, DEV)).toBe(1n)
  })

  it('reads code, `0x` where there is none', async () => {
    expect(await getCode(node, EMITTER)).toBe(EMITTER_CODE)
    expect(hasCode(await getCode(node, OTHER))).toBe(false)
  })

  it('reads a transaction, its receipt and its log', async () => {
    const tx = await getTransaction(node, txHash)
    expect(tx).toMatchObject({ hash: txHash, from: DEV, to: EMITTER, value: 0n })
    const receipt = await getTransactionReceipt(node, txHash)
    expect(receipt?.status).toBe(1n)
    expect(receipt?.logs).toHaveLength(1)
    const logs = await getLogs(node, { address: EMITTER, fromBlock: 0n, toBlock: 'latest' })
    expect(logs).toHaveLength(1)
    expect(logs[0]).toMatchObject({ address: EMITTER, transactionHash: txHash, logIndex: 0n })
    expect(logs[0]?.topics).toEqual([`0x${'0'.repeat(63)}1`])
    const unknown = `0x${'ab'.repeat(32)}` as Hash
    expect(await getTransaction(node, unknown)).toBeNull()
    expect(await getTransactionReceipt(node, unknown)).toBeNull()
  })

  it('answers eth_call with the return data, and a revert as the node error it is', async () => {
    const data = encodeFunctionData({ abi: parseAbi(['function f()']), functionName: 'f' })
    expect(await call(node, { to: OTHER, data })).toBe('0x')
    const err = await call(node, { to: REVERTER, data }, 'latest', { label: 'eth_call (probe)' }).catch(
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(UpstreamUnavailableError)
    const e = err as UpstreamUnavailableError
    expect(e.problem).toBe('error_answer')
    expect(e.method).toBe('eth_call (probe)')
    expect(e.network).toBe('ethereum/devnet')
    expect(e.code).toBe(-32603)
    expect(nodeError(e)?.data).toBe('0xdeadbeef')
    expect(nodeAnswered(e)).toBe(true)
    expect(e.publicMessage).toMatch(
      /^upstream for ethereum\/devnet unavailable: eth_call \(probe\) answered error -?\d+$/,
    )
  })

  it('names the method when no upstream can be reached', async () => {
    const gone = await startAnvil()
    const cfg = anvilNetwork(gone)
    await gone.stop()
    const dead = new ManagedPool(cfg)
    try {
      const err = await getBlockNumber(
        { pool: dead, chain: 'ethereum', network: 'devnet' },
        { timeoutMs: 300 },
      ).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(UpstreamUnavailableError)
      const e = err as UpstreamUnavailableError
      expect(e.method).toBe('eth_blockNumber')
      expect(['unreachable', 'not_verified', 'timeout']).toContain(e.problem)
      expect(nodeAnswered(e)).toBe(false)
    } finally {
      await dead.close()
    }
  })
})

/**
 * A fake node: a tiny local HTTP relay in front of a real anvil that passes everything through
 * (so the pool's health checks pass) except three methods, answered in shapes they never have.
 */
describe('chain reads against a node answering in the wrong shape', () => {
  let anvil: AnvilProcess
  let relay: Server
  let pool: ManagedPool
  let node: ChainNode
  const BAD: Record<string, unknown> = {
    eth_getBalance: 42,
    eth_getCode: 'not hex',
    eth_getLogs: { logs: [] },
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    relay = createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => {
        body += c.toString()
      })
      req.on('end', async () => {
        const msg = z.object({ id: z.unknown(), method: z.string() }).passthrough().parse(JSON.parse(body))
        const answer =
          msg.method in BAD
            ? JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: BAD[msg.method] })
            : await (
                await fetch(anvil.url, {
                  method: 'POST',
                  headers: { 'content-type': 'application/json' },
                  body,
                })
              ).text()
        res.writeHead(200, { 'content-type': 'application/json' }).end(answer)
      })
    })
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()))
    const port = (relay.address() as AddressInfo).port
    const cfg = anvilNetwork(anvil, { upstreams: [{ url: `http://127.0.0.1:${port}` }] })
    pool = new ManagedPool(cfg)
    node = { pool, chain: 'ethereum', network: 'devnet' }
  })
  afterAll(async () => {
    await pool?.close()
    if (relay) await close(relay)
    await anvil?.stop()
  })

  it('refuses each malformed answer as invalid_response naming the method, the zod error as cause', async () => {
    const reads: [string, () => Promise<unknown>][] = [
      ['eth_getBalance', () => getBalance(node, OTHER)],
      ['eth_getCode', () => getCode(node, OTHER)],
      ['eth_getLogs', () => getLogs(node, { fromBlock: 0n, toBlock: 'latest' })],
    ]
    for (const [method, read] of reads) {
      const err = await read().catch((e: unknown) => e)
      expect(err).toBeInstanceOf(UpstreamUnavailableError)
      const e = err as UpstreamUnavailableError
      expect(e.problem).toBe('invalid_response')
      expect(e.method).toBe(method)
      expect(e.message).toBe(`${method} returned a malformed answer`)
      expect(e.publicMessage).toBe('upstream for ethereum/devnet unavailable: answered an invalid response')
      expect(e.cause).toBeInstanceOf(z.ZodError)
      expect(malformedAnswer(e)).toBe(true)
      expect(nodeError(e)).toBeUndefined()
    }
    // The methods the relay passes through still read fine through the same pool.
    expect(await chainId(node)).toBe(31337n)
  })
})
