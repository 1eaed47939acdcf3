import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import {
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase58Decoder,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postRpc, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { networkSchema } from '../server/config-schema.ts'
import type { Storage } from '../storage/database.ts'

const base58 = getBase58Decoder()
const GENESIS = base58.decode(new Uint8Array(32).fill(7))
const BALANCE = 5_000_000_000

/**
 * A scripted Solana upstream. No Solana validator can run here, so this small HTTP server
 * stands in for one: it answers the handful of methods the test uses, in the shapes a real
 * node uses, and counts the calls it receives. Everything else in the test is real: Halyard,
 * its storage, and the Solana client library (@solana/kit) driving it.
 */
function scriptedSolanaNode(): Promise<{ server: Server; url: string; calls: Map<string, number> }> {
  const calls = new Map<string, number>()
  let slot = 1_000
  const handle = (method: string, params: unknown[]): unknown => {
    calls.set(method, (calls.get(method) ?? 0) + 1)
    const context = { slot, apiVersion: '2.2.0' }
    switch (method) {
      case 'getSlot':
        return slot++
      case 'getGenesisHash':
        return GENESIS
      case 'getHealth':
        return 'ok'
      case 'getBalance':
        return { context, value: BALANCE }
      case 'getLatestBlockhash':
        // A fresh blockhash every time: a cache in front would show as a repeated one.
        return {
          context,
          value: { blockhash: base58.decode(randomBytes(32)), lastValidBlockHeight: slot + 150 },
        }
      case 'getBlock':
        return {
          blockhash: base58.decode(randomBytes(32)),
          parentSlot: Number(params[0]) - 1,
          blockHeight: Number(params[0]),
          blockTime: 1_700_000_000,
          previousBlockhash: GENESIS,
          transactions: [],
        }
      case 'sendTransaction': {
        // The wire transaction starts with the signature count (1) and the first signature.
        const wire = Buffer.from(String(params[0]), 'base64')
        return base58.decode(wire.subarray(1, 65))
      }
      default:
        return undefined
    }
  }
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const body = JSON.parse(Buffer.concat(chunks).toString()) as {
      id: number
      method: string
      params?: unknown[]
    }
    const result = handle(body.method, body.params ?? [])
    res.setHeader('content-type', 'application/json')
    res.end(
      JSON.stringify(
        result === undefined
          ? { jsonrpc: '2.0', id: body.id, error: { code: -32601, message: 'Method not found' } }
          : { jsonrpc: '2.0', id: body.id, result },
      ),
    )
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, calls }),
    ),
  )
}

describe('Solana network (kind: solana) against a scripted Solana upstream, driven by @solana/kit', () => {
  let node: Awaited<ReturnType<typeof scriptedSolanaNode>>
  let storage: Storage
  let h: TestHalyard
  let url: string
  let readKey: string
  let writeKey: string

  const kit = (key: string) => createSolanaRpc(url, { headers: { 'x-api-key': key } })

  beforeAll(async () => {
    node = await scriptedSolanaNode()
    storage = await storageBackends()[0]!.open()
    h = await startTestHalyard({
      storage,
      networks: [
        networkSchema.parse({
          chain: 'solana',
          network: 'devnet',
          kind: 'solana',
          blockTimeMs: 400,
          nativeCurrency: { symbol: 'SOL', decimals: 9 },
          upstreams: [{ url: node.url }],
          gateway: { healthCheckMs: 100, genesisHash: GENESIS },
        }),
      ],
    })
    readKey = await h.createKey({ scopes: ['rpc:read'] })
    writeKey = await h.createKey({ scopes: ['rpc:read', 'rpc:write'] })
    url = `${h.baseUrl}/rpc/solana/devnet`
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    node?.server.close()
  })

  it('answers getBalance, getSlot and getLatestBlockhash; balances and blockhashes are never cached', async () => {
    const rpc = kit(readKey)
    const owner = (await generateKeyPairSigner()).address
    const balance = await rpc.getBalance(owner).send()
    expect(balance.value).toBe(BigInt(BALANCE))
    expect(typeof (await rpc.getSlot().send())).toBe('bigint')
    const one = await rpc.getLatestBlockhash().send()
    const two = await rpc.getLatestBlockhash().send()
    expect(one.value.blockhash).not.toBe(two.value.blockhash)
    const before = node.calls.get('getBalance') ?? 0
    await rpc.getBalance(owner).send()
    expect(node.calls.get('getBalance')).toBe(before + 1)
  })

  it('caches a finalized, slot-pinned getBlock', async () => {
    const res1 = await postRpc(url, readKey, {
      jsonrpc: '2.0',
      id: 1,
      method: 'getBlock',
      params: [900, { commitment: 'finalized' }],
    })
    const before = node.calls.get('getBlock')
    const res2 = await postRpc(url, readKey, {
      jsonrpc: '2.0',
      id: 1,
      method: 'getBlock',
      params: [900, { commitment: 'finalized' }],
    })
    expect(res1.headers.get('x-cache')).toBe('MISS')
    expect(res2.headers.get('x-cache')).toBe('HIT')
    expect(res2.json).toEqual(res1.json)
    expect(node.calls.get('getBlock')).toBe(before)
  })

  it('sends a transaction signed with @solana/kit only for a key with rpc:write', async () => {
    const signer = await generateKeyPairSigner()
    const { value: latest } = await kit(readKey).getLatestBlockhash().send()
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(signer, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(latest, m),
    )
    const tx = await signTransactionMessageWithSigners(message)
    const wire = getBase64EncodedWireTransaction(tx)

    const sent = node.calls.get('sendTransaction') ?? 0
    await expect(kit(readKey).sendTransaction(wire, { encoding: 'base64' }).send()).rejects.toThrow(/403/)
    expect(node.calls.get('sendTransaction') ?? 0).toBe(sent)

    const signature = await kit(writeKey).sendTransaction(wire, { encoding: 'base64' }).send()
    expect(signature).toBe(getSignatureFromTransaction(tx))
  })

  it('answers a batch item by item, refusing unknown and EVM methods with -32601', async () => {
    // @solana/kit sends one call per request, so the batch goes over plain fetch.
    const res = await postRpc(url, readKey, [
      { jsonrpc: '2.0', id: 1, method: 'getSlot', params: [] },
      { jsonrpc: '2.0', id: 2, method: 'eth_blockNumber', params: [] },
      { jsonrpc: '2.0', id: 3, method: 'getBalance', params: [(await generateKeyPairSigner()).address] },
      { jsonrpc: '2.0', id: 4, method: 'sendTransaction', params: ['AA=='] },
    ])
    const items = res.json as unknown as { id: number; result?: unknown; error?: { code: number } }[]
    expect(items.map((i) => i.id)).toEqual([1, 2, 3, 4])
    expect(typeof items[0]?.result).toBe('number')
    expect(items[1]?.error?.code).toBe(-32601)
    expect((items[2]?.result as { value: number } | undefined)?.value).toBe(BALANCE)
    expect(items[3]?.error?.code).toBe(-32003)
  })
})
