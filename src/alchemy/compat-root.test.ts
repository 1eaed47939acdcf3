import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { openTestPGlite } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'

/** The compat root's own rules: network names, the key in the path, refusals, redaction. */
describe('Alchemy-compatible root', () => {
  let anvil: AnvilProcess
  let storage: Storage
  let h: TestHalyard
  let key: string
  let origin: string

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await openTestPGlite()
    h = await startTestHalyard({
      networks: [anvilNetwork(anvil, { indexer: { enabled: false }, alchemyNames: ['my-devnet'] })],
      storage,
    })
    key = await h.createKey()
    origin = h.baseUrl
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('serves JSON-RPC under the slug, chain-network, Alchemy-style and configured names, trailing slash too', async () => {
    for (const name of ['ethereum-devnet', 'eth-devnet', 'my-devnet']) {
      for (const tail of ['', '/']) {
        const res = await postRpc(
          `${origin}/alchemy/${name}/v2/${key}${tail}`,
          undefined,
          call('eth_chainId'),
        )
        expect(res.status, `${name}${tail}`).toBe(200)
        expect(res.json.result).toBe(`0x${anvil.chainId.toString(16)}`)
      }
    }
  })

  it('takes the key from the path alone, and refuses a wrong one with 401 and the error body', async () => {
    const res = await postRpc(
      `${origin}/alchemy/eth-devnet/v2/hal_test_wrong`,
      undefined,
      call('eth_chainId'),
    )
    expect(res.status).toBe(401)
    expect(res.json).toMatchObject({ error: { code: 'unauthorized' } })
    expect(JSON.stringify(res.json)).not.toContain('hal_test_wrong')
  })

  it('answers an unknown network with 404 naming it', async () => {
    const res = await postRpc(`${origin}/alchemy/eth-nowhere/v2/${key}`, undefined, call('eth_chainId'))
    expect(res.status).toBe(404)
    expect(JSON.stringify(res.json)).toContain('eth-nowhere')
  })

  it('refuses an alchemy_* method it does not serve with -32601 saying so', async () => {
    const res = await postRpc(
      `${origin}/alchemy/eth-devnet/v2/${key}`,
      undefined,
      call('alchemy_simulateExecution', [{}]),
    )
    expect(res.status).toBe(200)
    expect(res.json.error).toMatchObject({ code: -32601 })
    expect(String((res.json.error as { message: string }).message)).toMatch(
      /alchemy_simulateExecution.*not served/,
    )
  })

  it('never repeats the key in a 404 for a path under the root', async () => {
    const res = await fetch(`${origin}/alchemy/eth-devnet/v2/${key}/a/b/c`)
    expect(res.status).toBe(404)
    const text = await res.text()
    expect(text).not.toContain(key)
    expect(text).toContain('[redacted]')
  })
})
