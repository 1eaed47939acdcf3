import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { storageBackends, type TestStorage } from '../../test/helpers/storage.ts'
import { ANVIL_EXECUTOR_KEYS } from '../bundler/executor.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'

/**
 * Method classes against a real anvil, whose dev accounts are unlocked as on `halyard dev` (one
 * of them is the bundler's executor): a read-only key reaches reads only, nothing signs or sends
 * with the node's accounts for any key, debugMethods serves only the trace reads, and the
 * snapshot/revert pair is gated like the other devnet-destructive methods.
 */

const backend = storageBackends()[0]
if (!backend) throw new Error('no storage backend')

const EXECUTOR = privateKeyToAccount(ANVIL_EXECUTOR_KEYS[0]!).address
const RECIPIENT = '0x00000000000000000000000000000000000c1a55'

describe('JSON-RPC method classes', () => {
  let anvil: AnvilProcess
  let storage: TestStorage
  let h: TestHalyard
  let url: string
  let reader: string
  let writer: string

  /** Straight to the node: what Halyard did or did not do there. */
  const node = async (method: string, params: unknown[] = []) => {
    const r = await postRpc(anvil.url, undefined, call(method, params))
    return r.json.result as string
  }

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await backend.open()
    const indexer = { enabled: false }
    h = await startTestHalyard({
      networks: [
        // As `halyard dev` configures its devnet: debug methods on.
        anvilNetwork(anvil, { indexer, debugMethods: true }),
        anvilNetwork(anvil, { network: 'scratch', indexer, devMethods: { destructive: true } }),
      ],
      storage,
    })
    url = `${h.baseUrl}/rpc/ethereum/devnet`
    reader = await h.createKey({ scopes: ['rpc:read'] })
    writer = await h.createKey({ scopes: ['rpc:read', 'rpc:write'] })
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it("refuses every method that sends, signs or changes the node with the node's accounts, for any key", async () => {
    await node('evm_mine')
    const before = {
      balance: await node('eth_getBalance', [EXECUTOR, 'latest']),
      nonce: await node('eth_getTransactionCount', [EXECUTOR, 'latest']),
      head: await node('eth_blockNumber'),
    }
    expect(BigInt(before.balance)).toBeGreaterThan(10n ** 21n)
    const send = { from: EXECUTOR, to: RECIPIENT, value: `0x${(9_999n * 10n ** 18n).toString(16)}` }
    const typed = {
      types: { EIP712Domain: [{ name: 'name', type: 'string' }], M: [{ name: 'a', type: 'uint256' }] },
      primaryType: 'M',
      domain: { name: 'x' },
      message: { a: 1 },
    }
    const refusedForAll: [string, unknown[]][] = [
      ['eth_sendTransactionSync', [send]],
      ['eth_sendTransaction', [send]],
      ['eth_signTypedData', [EXECUTOR, typed]],
      ['eth_signTypedData_v3', [EXECUTOR, typed]],
      ['eth_sign', [EXECUTOR, '0x01']],
      ['debug_setHead', ['0x0']],
      ['debug_setGCPercent', [1]],
      ['debug_startCPUProfile', ['/tmp/x']],
      ['debug_traceBlockToFile', ['0x1']],
      ['eth_foo', []],
    ]
    for (const key of [reader, writer]) {
      for (const [method, params] of refusedForAll) {
        const r = await postRpc(url, key, call(method, params))
        expect(r.status, method).toBe(200)
        expect(r.json.error, method).toMatchObject({ code: -32601, message: expect.stringContaining(method) })
      }
    }
    // A signed write needs rpc:write: a read-only key is refused before anything is forwarded.
    const conditional = await postRpc(url, reader, call('eth_sendRawTransactionConditional', ['0x02', {}]))
    expect(conditional.status).toBe(403)
    expect(conditional.json).toMatchObject({
      error: {
        code: 'forbidden',
        message: expect.stringContaining('rpc:write scope required for eth_sendRawTransactionConditional'),
      },
    })
    const batch = await postRpc(url, reader, [
      call('eth_sendBundle', [{ txs: ['0x02'], blockNumber: '0x1' }], 1),
      call('eth_sendTransactionSync', [send], 2),
      call('eth_chainId', [], 3),
    ])
    expect(batch.json).toEqual([
      { jsonrpc: '2.0', id: 1, error: { code: -32003, message: expect.stringContaining('rpc:write') } },
      {
        jsonrpc: '2.0',
        id: 2,
        error: { code: -32601, message: expect.stringContaining('eth_sendTransactionSync') },
      },
      { jsonrpc: '2.0', id: 3, result: '0x7a69' },
    ])

    // Nothing was sent or changed: the executor's balance and nonce, the recipient, the head.
    expect(await node('eth_getBalance', [EXECUTOR, 'latest'])).toBe(before.balance)
    expect(await node('eth_getTransactionCount', [EXECUTOR, 'latest'])).toBe(before.nonce)
    expect(await node('eth_getBalance', [RECIPIENT, 'latest'])).toBe('0x0')
    expect(await node('eth_blockNumber')).toBe(before.head)
  })

  it('serves the debug_trace* and raw reads with debugMethods, to a read-only key', async () => {
    const trace = await postRpc(
      url,
      reader,
      call('debug_traceCall', [{ to: RECIPIENT, data: '0x' }, 'latest', {}]),
    )
    expect(trace.json.error).toBeUndefined()
    expect(trace.json.result).toMatchObject({ failed: false })
    // Forwarded (what anvil answers is anvil's business): not refused by Halyard.
    const refusal = (r: { json: Record<string, unknown> }) =>
      (r.json.error as { message?: string } | undefined)?.message ?? ''
    const raw = await postRpc(url, reader, call('debug_getRawHeader', ['latest']))
    expect(refusal(raw)).not.toMatch(/not available|not enabled/)
    const unread = await postRpc(url, reader, call('eth_getHeaderByNumber', ['latest']))
    expect(refusal(unread)).not.toMatch(/not available|not enabled/)
    // Where debugMethods is off, the same read is refused.
    const off = await postRpc(
      `${h.baseUrl}/rpc/ethereum/scratch`,
      reader,
      call('debug_traceCall', [{ to: RECIPIENT }]),
    )
    expect(off.json.error).toMatchObject({ code: -32601, message: expect.stringContaining('not enabled') })
  })

  it('refuses evm_snapshot and evm_revert unless the network enables devnet-destructive methods', async () => {
    for (const method of [
      'evm_snapshot',
      'evm_revert',
      'anvil_snapshot',
      'anvil_revert',
      'anvil_dropAllTransactions',
    ]) {
      const r = await postRpc(url, writer, call(method, method.endsWith('revert') ? ['0x0'] : []))
      expect(r.json.error, method).toMatchObject({
        code: -32601,
        message: expect.stringMatching(/not enabled on ethereum\/devnet: .*devMethods\.destructive: true/),
      })
    }
    // Where they are enabled, the pair rolls the devnet back, as asked.
    const scratch = `${h.baseUrl}/rpc/ethereum/scratch`
    const head = await node('eth_blockNumber')
    const snap = await postRpc(scratch, writer, call('evm_snapshot'))
    expect(snap.json.result).toMatch(/^0x/)
    await node('evm_mine')
    expect(BigInt(await node('eth_blockNumber'))).toBe(BigInt(head) + 1n)
    expect((await postRpc(scratch, reader, call('evm_revert', [snap.json.result]))).status).toBe(403)
    expect((await postRpc(scratch, writer, call('evm_revert', [snap.json.result]))).json.result).toBe(true)
    expect(await node('eth_blockNumber')).toBe(head)
  })
})
