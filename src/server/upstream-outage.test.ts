import { createServer, type Server } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'

type RpcErr = { error?: { code: number; message: string }; result?: string }
type RestErr = { error?: { code: string; message: string; status: number } }

const HOLDER = '0x000000000000000000000000000000000000a11c'

describe('an unreachable upstream', () => {
  let anvil: AnvilProcess
  let silent: Server
  let storage: Storage
  let h: TestHalyard
  let key: string

  beforeAll(async () => {
    anvil = await startAnvil()
    // Accepts connections and never answers: the deadline, not the socket, must end the call.
    silent = createServer(() => {})
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
    const silentPort = (silent.address() as { port: number }).port
    storage = await storageBackends()[0]!.open()
    h = await startTestHalyard({
      networks: [
        // A stopped node refuses connections at once: no short deadline needed here, and a
        // short one failed the first call on a loaded machine (anvil slower than 500 ms).
        anvilNetwork(anvil, { requestTimeoutMs: 10_000 }),
        anvilNetwork(anvil, {
          network: 'silent',
          chainId: 31337,
          requestTimeoutMs: 500,
          upstreams: [{ url: `http://127.0.0.1:${silentPort}` }],
        }),
      ],
      storage,
    })
    key = await h.createKey()
  })
  const getRest = async (path: string) => {
    const res = await fetch(`${h.baseUrl}${path}`, { headers: { 'x-api-key': key } })
    return { status: res.status, body: (await res.json()) as RestErr }
  }
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
    silent?.close()
  })

  it('answers -32603 naming the cause when the node stops, stays up, and recovers when it returns', async () => {
    const url = `${h.baseUrl}/rpc/ethereum/devnet`
    expect(((await postRpc(url, key, call('eth_blockNumber'))).json as unknown as RpcErr).result).toMatch(
      /^0x/,
    )
    const port = anvil.port
    await anvil.stop()

    const down = await postRpc(url, key, call('eth_blockNumber'))
    expect(down.status).toBe(200)
    const err = (down.json as unknown as RpcErr).error
    expect(err?.code).toBe(-32603)
    expect(err?.message).toMatch(/upstream/i)
    // REST routes: still the documented 500 internal_error, but naming the network and the failure.
    for (const path of [
      `/tokens/ethereum-devnet/balances/${HOLDER}`,
      `/tokens/ethereum-devnet/metadata/${HOLDER}`,
      `/nfts/ethereum-devnet/collection/${HOLDER}`,
      '/gas/ethereum-devnet/prices',
    ]) {
      const rest = await getRest(path)
      expect(rest.status, path).toBe(500)
      expect(rest.body.error, path).toMatchObject({ code: 'internal_error', status: 500 })
      // No URL, host or upstream label: the network and the kind of failure only.
      expect(rest.body.error?.message, path).toMatch(
        /^upstream for ethereum\/devnet unavailable: connection (refused|reset|closed)$/,
      )
    }
    expect((await fetch(`${h.halyard.origin}/health`)).status).toBe(200)
    const ready = await fetch(`${h.halyard.origin}/ready`)
    expect(ready.status).toBe(503)
    expect(JSON.stringify(await ready.json())).toMatch(/network ethereum\/devnet.*failing/)

    anvil = await startAnvil({ port })
    let recovered: RpcErr = {}
    for (let i = 0; i < 60 && !recovered.result; i++) {
      recovered = (await postRpc(url, key, call('eth_chainId'))).json as unknown as RpcErr
      if (!recovered.result) await new Promise((r) => setTimeout(r, 500))
    }
    expect(recovered.result).toBe('0x7a69')
  })

  it('ends a call to a node that never answers at the deadline with -32603', async () => {
    const res = await postRpc(`${h.baseUrl}/rpc/ethereum/silent`, key, call('eth_blockNumber'))
    expect(res.status).toBe(200)
    const err = (res.json as unknown as RpcErr).error
    expect(err?.code).toBe(-32603)
    expect(err?.message).toMatch(/did not answer in time|timed out|deadline/i)

    const rest = await getRest(`/tokens/ethereum-silent/balances/${HOLDER}`)
    expect(rest.status).toBe(500)
    expect(rest.body.error?.message).toBe('upstream for ethereum/silent unavailable: timed out')
  })
})
