import { pad, toHex } from 'viem'
import { describe, expect, it } from 'vitest'
import { tokenTransferRows } from '../../test/fixtures/indexer/rows.ts'
import { A, B, webhooksFixture } from '../../test/fixtures/webhooks/webhooks-fixture.ts'
import { logEmitterInitcode } from '../../test/helpers/evm-code.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { DEV_ACCOUNT } from '../devnet/demo.ts'
import type { Address, Hash, Hex } from '../types.ts'
import { TRANSFER_BATCH_TOPIC, TRANSFER_SINGLE_TOPIC, TRANSFER_TOPIC } from './decode.ts'

const words = (...ws: bigint[]) => `0x${ws.map((w) => w.toString(16).padStart(64, '0')).join('')}` as Hex
const OPERATOR = pad(DEV_ACCOUNT)
const FROM = pad(A)
const TO = pad(B)

/**
 * One malformed transfer log used to stop a network's indexer for good (and with it
 * balances, NFT ownership and every webhook). Here a hostile "contract" (a constructor that only
 * emits a log) sends every malformed shape in its own transaction; an ordinary ERC-20 transfer
 * mined after all of them must still be indexed, shown and delivered, and each skip counted.
 */
const HOSTILE: { name: string; event: string; topics: Hex[]; head: Hex; size?: number }[] = [
  {
    // The log of the report: offset 0 points at a length the old decoder compared with
    // BigInt((data.length - 2) / 64), which throws RangeError for 33 bytes.
    name: 'TransferBatch with 33 bytes of data (not whole words)',
    event: 'TransferBatch',
    topics: [TRANSFER_BATCH_TOPIC, OPERATOR, FROM, TO],
    head: `${words(0n)}01` as Hex,
  },
  {
    name: 'TransferBatch with offsets past the data',
    event: 'TransferBatch',
    topics: [TRANSFER_BATCH_TOPIC, OPERATOR, FROM, TO],
    head: words(0x1000n, 0x2000n, 1n, 1n),
  },
  {
    name: 'TransferBatch with 2 ids and 3 values',
    event: 'TransferBatch',
    topics: [TRANSFER_BATCH_TOPIC, OPERATOR, FROM, TO],
    head: words(64n, 160n, 2n, 1n, 2n, 3n, 10n, 20n, 30n),
  },
  {
    // ids and values share one array of 100,000 zero words: 3.2 MB of real log data.
    name: 'TransferBatch with 100,000-element arrays',
    event: 'TransferBatch',
    topics: [TRANSFER_BATCH_TOPIC, OPERATOR, FROM, TO],
    head: words(64n, 64n, 100_000n),
    size: 96 + 32 * 100_000,
  },
  {
    name: 'TransferSingle with 32 bytes of data',
    event: 'TransferSingle',
    topics: [TRANSFER_SINGLE_TOPIC, OPERATOR, FROM, TO],
    head: words(1n),
  },
  {
    name: 'ERC-20 Transfer with 16 bytes of data',
    event: 'Transfer',
    topics: [TRANSFER_TOPIC, FROM, TO],
    head: `0x${'11'.repeat(16)}`,
  },
  {
    name: 'ERC-721 Transfer with its 4th topic (token id) missing',
    event: 'Transfer',
    topics: [TRANSFER_TOPIC, FROM, TO],
    head: '0x',
  },
]

describe.each(storageBackends())('hostile transfer logs on $name', (backend) => {
  const fx = webhooksFixture(backend)

  /** Deploys one log emitter in its own transaction; returns its address. */
  async function emit(topics: Hex[], head: Hex, size?: number): Promise<Address> {
    const hash = await fx.dev.rpc<Hash>('eth_sendTransaction', [
      { from: DEV_ACCOUNT, data: logEmitterInitcode(topics, head, size), gas: toHex(60_000_000n) },
    ])
    const receipt = await fx.dev.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    expect(receipt.status).toBe('success')
    expect(receipt.logs).toHaveLength(1)
    return (receipt.contractAddress as string).toLowerCase() as Address
  }

  async function skippedCounts(): Promise<Record<string, number>> {
    const text = await (await fetch(`${fx.h.halyard.origin}/metrics`)).text()
    const out: Record<string, number> = {}
    for (const line of text.split('\n')) {
      if (!line.startsWith('halyard_indexer_logs_skipped_total{') || !line.includes('"ethereum-devnet"'))
        continue
      const event = /event="([^"]+)"/.exec(line)?.[1]
      if (event) out[event] = Number(line.split(' ').at(-1))
    }
    return out
  }

  it('skips and counts every malformed log; a transfer mined after them is indexed, listed and delivered', async () => {
    const { dev, receiver, usd } = fx
    const hook = await fx.create('after-hostile', 'token_transfer', { contracts: [usd] })
    // The 100,000-element batch needs ~46M gas (memory plus 8 gas a log byte): above the default block.
    await dev.rpc('anvil_setBlockGasLimit', [toHex(100_000_000n)])

    const emitters: Address[] = []
    for (const c of HOSTILE) emitters.push(await emit(c.topics, c.head, c.size))
    const mint = await dev.send('DemoERC20', usd, 'mint', [A, 4242n])
    await fx.synced()

    // The transfer after them is indexed: it shows in the balances…
    const balances = await fx.api('GET', `/tokens/ethereum-devnet/balances/${A}`)
    expect(balances.status).toBe(200)
    const tokens = balances.body.tokens as { contract: string; balance: string }[]
    expect(tokens.find((t) => t.contract === usd)?.balance).toBe('4242')
    // …and its webhook is delivered.
    const delivered = await until('the webhook of the transfer mined after the hostile logs', () =>
      receiver.acked('after-hostile').find((r) => r.body.data.tx_hash === mint),
    )
    expect(delivered.body.data).toMatchObject({ contract: usd, to: A, value: '4242', symbol: 'DUSD' })
    expect(hook.status).toBe('active')

    // Nothing was stored from the hostile logs, and each one was counted by its event.
    const stored = (await tokenTransferRows(fx.storage.db))
      .filter((r) => emitters.includes(r.contract))
      .map((r) => ({ contract: r.contract }))
    expect(stored).toEqual([])
    const expected: Record<string, number> = {}
    for (const c of HOSTILE) expected[c.event] = (expected[c.event] ?? 0) + 1
    expect(expected).toEqual({ TransferBatch: 4, TransferSingle: 1, Transfer: 2 })
    expect(await skippedCounts()).toEqual(expected)
    const counted = Object.values(await skippedCounts()).reduce((a, b) => a + b, 0)
    expect(counted).toBe(HOSTILE.length)
  })
})
