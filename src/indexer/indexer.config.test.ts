import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork } from '../../test/helpers/halyard.ts'
import { describeNeeding } from '../../test/helpers/services.ts'
import {
  POSTGRES_ONLY,
  type StorageBackend,
  storageBackends,
  type TestStorage,
} from '../../test/helpers/storage.ts'
import { NetworkRegistry } from '../chains/registry.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { createLogger } from '../logger.ts'
import { IndexerService } from './service.ts'
import type { BlockConsumer, IndexedBlock } from './types.ts'

const SPRAY_TXS = 12
const PER_TX = 10

/** Many blocks with transfers, so a backfill takes many eth_getLogs ranges. */
async function seedChain(anvil: AnvilProcess): Promise<{ head: bigint; expected: number }> {
  const dev = new Devnet(anvil.url)
  const token = await dev.deploy('DemoERC20', ['R', 'R', 18])
  for (let i = 0; i < SPRAY_TXS; i++) {
    await dev.send('DemoERC20', token, 'spray', [BigInt(i), BigInt(PER_TX), 1n])
    await dev.rpc('anvil_mine', ['0x2'])
  }
  return { head: BigInt(await dev.rpc<string>('eth_blockNumber')), expected: SPRAY_TXS * PER_TX }
}

const countTransfers = async (s: TestStorage) =>
  Number(
    (
      await s.db
        .selectFrom('token_transfers')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  )

describe('adaptive eth_getLogs ranges during backfill', () => {
  let anvil: AnvilProcess
  let proxy: Server
  let proxyUrl: string
  /** Span (blocks) of every eth_getLogs range request, with whether it was refused. */
  const spans: { span: number; refused: boolean }[] = []
  const LIMIT = 5

  beforeAll(async () => {
    anvil = await startAnvil()
    // A fake of a hosted node's range limit (none of the nodes that enforce one runs here): the
    // proxy answers eth_getLogs over more than LIMIT blocks with the JSON-RPC error such nodes
    // send, and passes everything else through to the real anvil.
    proxy = createServer(async (req, res) => {
      const chunks: Buffer[] = []
      for await (const c of req) chunks.push(c as Buffer)
      const body = JSON.parse(Buffer.concat(chunks).toString()) as {
        id: number
        method: string
        params: { fromBlock?: string; toBlock?: string }[]
      }
      const f = body.params?.[0]
      if (body.method === 'eth_getLogs' && f?.fromBlock && f.toBlock) {
        const span = Number(BigInt(f.toBlock) - BigInt(f.fromBlock)) + 1
        const refused = span > LIMIT
        spans.push({ span, refused })
        if (refused) {
          res.setHeader('content-type', 'application/json')
          res.end(
            JSON.stringify({
              jsonrpc: '2.0',
              id: body.id,
              error: { code: -32005, message: `query exceeds max block range ${LIMIT}` },
            }),
          )
          return
        }
      }
      const up = await fetch(anvil.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      res.setHeader('content-type', 'application/json')
      res.end(await up.text())
    })
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise<void>((r) => proxy?.close(() => r()))
    await anvil?.stop()
  })

  it('narrows to the range a refusal names, stays within it, and indexes every transfer exactly once', async () => {
    const { head, expected } = await seedChain(anvil)
    // The range logic does not depend on the database: the fastest one at hand will do.
    const storage = await (storageBackends().at(-1) as StorageBackend).open()
    const base = anvilNetwork(anvil, { indexer: { enabled: true, maxBlockRange: 64 } })
    const upstream = { ...(base.upstreams[0] as (typeof base.upstreams)[number]), url: proxyUrl }
    const networks = new NetworkRegistry([{ ...base, upstreams: [upstream] }])
    const indexer = new IndexerService({ storage, networks, logger: createLogger('silent'), pollMs: 20 })
    indexer.start()
    try {
      await indexer.waitForBlock('ethereum-devnet', head)
    } finally {
      await indexer.stop()
      await networks.close()
    }
    expect(await countTransfers(storage)).toBe(expected)
    await storage.close()

    const refused = spans.filter((s) => s.refused)
    const served = spans.filter((s) => !s.refused)
    expect(refused.length).toBeGreaterThan(0)
    expect(served.length).toBeGreaterThan(0)
    expect(served.every((s) => s.span <= LIMIT)).toBe(true)
    // The refusal names the limit (range-hint.ts): the next request asks for exactly that, and
    // the range never grows past it again (doubling after a success stops at the named width).
    const firstServed = spans.findIndex((s) => !s.refused)
    expect(spans[firstServed]?.span).toBe(LIMIT)
    expect(spans.slice(firstServed).some((s) => s.refused)).toBe(false)
  })
})

describe('start block and confirmations from the network config', () => {
  let anvil: AnvilProcess

  beforeAll(async () => {
    anvil = await startAnvil()
  })
  afterAll(async () => {
    await anvil?.stop()
  })

  it('indexes from startBlock and never past head minus confirmations', async () => {
    const dev = new Devnet(anvil.url)
    const token = await dev.deploy('DemoERC20', ['S', 'S', 18])
    const spray = async (seed: bigint, count: bigint) => {
      const hash = await dev.send('DemoERC20', token, 'spray', [seed, count, 1n])
      return (await dev.client.getTransactionReceipt({ hash })).blockNumber
    }
    await spray(0n, 3n) // before the start block: never indexed
    const start = await spray(1n, 4n)
    await spray(2n, 5n) // start + 1
    await spray(3n, 6n) // start + 2 = head: within 2 confirmations
    const storage = await (storageBackends().at(-1) as StorageBackend).open()
    const networks = new NetworkRegistry([
      anvilNetwork(anvil, {
        confirmations: 2,
        indexer: { enabled: true, startBlock: Number(start), maxBlockRange: 2000 },
      }),
    ])
    const indexer = new IndexerService({ storage, networks, logger: createLogger('silent'), pollMs: 20 })
    indexer.start()
    try {
      await indexer.waitForBlock('ethereum-devnet', start)
      expect(await countTransfers(storage)).toBe(4)
      // One more block: the target moves to start + 1 and no further.
      await dev.rpc('anvil_mine', ['0x1'])
      await indexer.waitForBlock('ethereum-devnet', start + 1n)
      expect((await indexer.cursor('ethereum-devnet'))?.number).toBe(start + 1n)
      expect(await countTransfers(storage)).toBe(4 + 5)
    } finally {
      await indexer.stop()
      await networks.close()
      await storage.close()
    }
  })
})

describe('consumers that ask for full blocks', () => {
  let anvil: AnvilProcess

  beforeAll(async () => {
    anvil = await startAnvil()
  })
  afterAll(async () => {
    await anvil?.stop()
  })

  it('get every block in order with its transactions during backfill, not only blocks with logs', async () => {
    const dev = new Devnet(anvil.url)
    await dev.rpc('anvil_mine', ['0xa'])
    const valueTx = await dev.rpc<string>('eth_sendTransaction', [
      { from: DEV_ACCOUNT, to: '0x0000000000000000000000000000000000000b0b', value: '0x1' },
    ])
    await dev.rpc('anvil_mine', ['0xa'])
    const token = await dev.deploy('DemoERC20', ['F', 'F', 18])
    await dev.send('DemoERC20', token, 'mint', [DEV_ACCOUNT, 1n])
    const head = BigInt(await dev.rpc<string>('eth_blockNumber'))
    const seen: IndexedBlock[] = []
    const storage = await (storageBackends().at(-1) as StorageBackend).open()
    const networks = new NetworkRegistry([anvilNetwork(anvil)])
    const indexer = new IndexerService({ storage, networks, logger: createLogger('silent'), pollMs: 20 })
    indexer.addConsumer({
      name: 'full',
      async needsFullBlocks(network) {
        return network === 'ethereum-devnet'
      },
      async onBlock(_trx, block) {
        seen.push(block)
      },
      async onRollback() {},
    })
    indexer.start()
    try {
      await indexer.waitForBlock('ethereum-devnet', head)
    } finally {
      await indexer.stop()
      await networks.close()
      await storage.close()
    }
    // Far more than the follower's block-by-block gap: this went through range backfill.
    expect(head).toBeGreaterThan(16n)
    expect(seen.map((b) => b.number)).toEqual(Array.from({ length: Number(head) + 1 }, (_, i) => BigInt(i)))
    expect(seen.every((b) => Array.isArray(b.transactions))).toBe(true)
    const withValue = seen.find((b) => b.transactions?.some((t) => t.hash === valueTx))
    expect(withValue?.transactions?.find((t) => t.hash === valueTx)).toMatchObject({ value: 1n })
    expect(seen.at(-1)?.transfers).toHaveLength(1)
  })
})

describeNeeding(
  ['DATABASE_URL'],
  'one indexer per network across instances (PostgreSQL advisory lock)',
  () => {
    let anvil: AnvilProcess
    let storage: TestStorage

    beforeAll(async () => {
      anvil = await startAnvil()
      storage = await (POSTGRES_ONLY[0] as StorageBackend).open()
    })
    afterAll(async () => {
      await storage?.close()
      await anvil?.stop()
    })

    it('runs one follower at a time: every block is processed once, and a standby takes over', async () => {
      const { head } = await seedChain(anvil)
      const processed: { instance: string; block: bigint }[] = []
      const recorder = (instance: string): BlockConsumer => ({
        name: `rec-${instance}`,
        async onBlock(_trx, block) {
          processed.push({ instance, block: block.number })
        },
        async onRollback() {},
      })
      // Two "instances": separate registries and services over the same PostgreSQL schema.
      const make = (instance: string) => {
        const networks = new NetworkRegistry([anvilNetwork(anvil)])
        const indexer = new IndexerService({
          storage,
          networks,
          logger: createLogger('silent'),
          pollMs: 20,
          lockRetryMs: 100,
        })
        indexer.addConsumer(recorder(instance))
        return { indexer, networks }
      }
      const a = make('a')
      const b = make('b')
      a.indexer.start()
      b.indexer.start()
      await a.indexer.waitForBlock('ethereum-devnet', head)
      const blocks = processed.map((p) => p.block)
      expect(new Set(blocks).size).toBe(blocks.length)
      expect(new Set(processed.map((p) => p.instance)).size).toBe(1)
      const leader = processed[0]?.instance === 'a' ? a : b
      const standby = leader === a ? b : a
      const standbyName = leader === a ? 'b' : 'a'

      // The leader goes away; new blocks are indexed by the standby once it takes the lock.
      await leader.indexer.stop()
      await leader.networks.close()
      const dev = new Devnet(anvil.url)
      await dev.rpc('anvil_mine', ['0x3'])
      await standby.indexer.waitForBlock('ethereum-devnet', head + 3n)
      await standby.indexer.stop()
      await standby.networks.close()
      const after = processed.filter((p) => p.block > head)
      expect(after.length).toBeGreaterThan(0)
      expect(after.every((p) => p.instance === standbyName)).toBe(true)
      const all = processed.map((p) => p.block)
      expect(new Set(all).size).toBe(all.length)
      expect(await countTransfers(storage)).toBe(SPRAY_TXS * PER_TX)
    })
  },
)
