import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { openTestPGlite } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { createLogger } from '../logger.ts'
import type { Storage } from '../storage/database.ts'

const HOLDER = '0x000000000000000000000000000000000000a11c'

/**
 * Keys on the compat root and beside it: `Authorization: Bearer <key>` (what @account-kit/infra
 * sends) works on REST, on /v1/rpc and on the compat root; and a run of calls through the compat
 * root at log level debug leaves no key in any log line.
 */
describe('API keys: Bearer everywhere, never in a log line', () => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let key: string
  const lines: string[] = []

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await openTestPGlite()
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(chunk.toString())
        cb()
      },
    })
    h = await startTestHalyard({
      networks: [anvilNetwork(anvil)],
      storage,
      extra: { logger: createLogger('debug', sink) },
    })
    key = await h.createKey()
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  const bearer = () => ({ authorization: `Bearer ${key}` })

  it('accepts Authorization: Bearer on a REST route, on /v1/rpc and on the compat root', async () => {
    const rest = await fetch(`${h.baseUrl}/tokens/ethereum-devnet/balances/${HOLDER}`, { headers: bearer() })
    expect(rest.status).toBe(200)
    const rpc = await postRpc(`${h.baseUrl}/rpc/ethereum/devnet`, undefined, call('eth_chainId'), bearer())
    expect(rpc.status).toBe(200)
    expect(rpc.json.result).toBe(`0x${anvil.chainId.toString(16)}`)
    // The compat root always carries a key in its path; the Bearer header beside it (account-kit
    // sends both when given apiKey and rpcUrl) is accepted, and the path's key is the one used.
    const root = await postRpc(
      `${h.baseUrl}/alchemy/eth-devnet/v2/${key}`,
      undefined,
      call('eth_chainId'),
      bearer(),
    )
    expect(root.status).toBe(200)
    const wrongPath = await postRpc(
      `${h.baseUrl}/alchemy/eth-devnet/v2/halyard_test_wrong`,
      undefined,
      call('eth_chainId'),
      bearer(),
    )
    expect(wrongPath.status).toBe(401)
    const wrongBearer = await fetch(`${h.baseUrl}/tokens/ethereum-devnet/balances/${HOLDER}`, {
      headers: { authorization: 'Bearer halyard_test_wrong' },
    })
    expect(wrongBearer.status).toBe(401)
  })

  it('never echoes a key from a mistyped path: 404 bodies, WebSocket refusals, logs', async () => {
    const before = lines.length
    const body = key.replace(/^halyard_test_/, '')
    const shouting = `HALYARD_TEST_${body}`
    const paths = [
      `/V2/${key}`,
      `/v2/${key}`,
      `//v1/alchemy/eth-devnet/v2/${key}/nowhere`,
      `/V1/ALCHEMY/eth-devnet/V2/${key}`,
      `/v1/alchemy/eth-devnet/V2/${key}/x`,
      `/v1/Alchemy/eth-devnet/v2/${key}`,
      `/alchemy//eth-devnet/v2/${key}/x`,
      `/v1/alchemy/eth-devnet/NFT/V3/${key}/getNFTsForOwner`,
      `/v1/alchemy/eth-devnet/v3/${key}`,
      `/v1/alchemy/eth-devnet/${shouting}`,
      `/v1/nowhere/${shouting}/x`,
      `/v1/nowhere/halyard%5Ftest%5F${body}`,
      `/x/V2/${body}`,
    ]
    const origin = h.baseUrl.replace(/\/v1$/, '')
    for (const p of paths) {
      const res = await fetch(`${origin}${p}`, { method: 'POST', body: '{}', headers: bearer() })
      const text = await res.text()
      expect(res.status, p).toBe(404)
      expect(text, p).not.toContain(body)
      expect(text, p).toContain('[redacted]')
    }
    for (const p of paths.slice(0, 6)) {
      const ws = new WebSocket(`${origin.replace(/^http/, 'ws')}${p}`)
      // A refused upgrade also errors the client; the refusal's status and body are the check.
      ws.on('error', () => {})
      const refusal = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        ws.once('unexpected-response', (_req, res) => {
          let text = ''
          res.on('data', (c: Buffer) => {
            text += c.toString()
          })
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }))
        })
        ws.once('open', () => reject(new Error(`${p} opened`)))
      })
      ws.terminate()
      expect(refusal.status, p).toBe(404)
      expect(refusal.text, p).not.toContain(body)
      expect(refusal.text, p).toContain('[redacted]')
    }
    expect(lines.slice(before).join('')).not.toContain(body)
  })

  it('leaves no key in the logs of a run through the compat root (debug level)', async () => {
    const wrong = `halyard_test_${'w'.repeat(32)}`
    const root = (k: string) => `${h.baseUrl}/alchemy/eth-devnet/v2/${k}`
    const before = lines.length
    await postRpc(root(key), undefined, [
      call('eth_chainId', [], 1),
      call('eth_getBalance', [HOLDER, 'latest'], 2),
      call('alchemy_getTokenBalances', [HOLDER], 3),
      call('alchemy_getTokenBalances', [HOLDER, 'erc20', { pageKey: 'garbage' }], 4),
      call('alchemy_simulateExecution', [{}], 5),
      call('eth_call', [{ to: HOLDER, data: '0xdeadbeef' }, 'nope'], 6),
      call(
        'alchemy_getAssetTransfers',
        [{ fromBlock: '0x0', toAddress: HOLDER, category: ['external', 'erc20'] }],
        7,
      ),
      call('alchemy_getTransactionReceipts', [{ blockNumber: '0x0' }], 8),
      call('rundler_maxPriorityFeePerGas', [], 9),
    ])
    await postRpc(root(wrong), undefined, call('eth_chainId'))
    await postRpc(`${h.baseUrl}/alchemy/eth-nowhere/v2/${key}`, undefined, call('eth_chainId'))
    await fetch(`${root(key)}/no/such/path?apiKey=${key}`)
    await fetch(`${root(wrong)}/getNFTsForOwner?owner=${HOLDER}`)
    const nft = await fetch(`${root(key)}/getNFTsForOwner?owner=${HOLDER}`)
    expect(nft.status).toBe(200)
    await fetch(`${h.baseUrl}/alchemy/eth-devnet/nft/v3/${key}/getContractMetadata?contractAddress=nope`)
    const wsUrl = `${root(key).replace(/^http/, 'ws')}`
    const ws = new WebSocket(wsUrl, ['alchemy-sdk-3.6.5'])
    const answer = await new Promise<string>((resolve, reject) => {
      ws.once('open', () => ws.send(JSON.stringify(call('eth_chainId'))))
      ws.once('message', (m) => resolve(m.toString()))
      ws.once('error', reject)
    })
    expect(JSON.parse(answer)).toMatchObject({ result: `0x${anvil.chainId.toString(16)}` })
    ws.close()
    const refused = new WebSocket(root(wrong).replace(/^http/, 'ws'), ['alchemy-sdk-3.6.5'])
    await new Promise<void>((resolve) => {
      refused.once('error', () => resolve())
      refused.once('unexpected-response', () => resolve())
    })
    refused.terminate()
    // Failures log (upstream errors, 5xx): the node goes away and the root is asked again.
    await anvil.stop()
    await postRpc(root(key), undefined, [
      call('eth_blockNumber', [], 1),
      call('alchemy_getTokenMetadata', [HOLDER], 2),
    ])
    await fetch(`${root(key)}/getNFTsForOwner?owner=${HOLDER}`)
    await fetch(`${h.baseUrl}/tokens/ethereum-devnet/balances/${HOLDER}`, { headers: bearer() })
    const out = lines.slice(before).join('')
    // The run did log (debug level): the check is not vacuous.
    expect(lines.length).toBeGreaterThan(before)
    expect(out).not.toContain(key)
    expect(out).not.toContain(key.slice(-16))
    expect(out).not.toContain(wrong)
    expect(lines.join('')).not.toContain(key)
  })
})
