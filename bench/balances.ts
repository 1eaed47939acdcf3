/**
 * npm run bench:balances — indexer transfers/s on a few huge transactions, and balances latency.
 *
 * 1. Generates ≥ 50,000 ERC-20 / ERC-721 / ERC-1155 transfers on anvil (contracts that emit
 *    hundreds of transfers per transaction), plus an address holding 200 different ERC-20s.
 * 2. Baseline: raw `eth_getLogs` over the same block range (fetch + JSON parse), logs/s.
 * 3. Indexer: a fresh schema, IndexerService from block 0 to the head: transfers/s, and the
 *    ratio to the baseline.
 * 4. GET /v1/tokens/{chain}/balances/{address} for the 200-token address: p50/p99 over
 *    sequential requests through the real HTTP stack — cold (first request after each new
 *    indexed block: every balance read again) and warm (repeated within one block).
 * DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) names the server.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { NetworkRegistry } from '../src/chains/registry.ts'
import { loadEnv } from '../src/config/env.ts'
import { startAnvil } from '../src/devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../src/devnet/demo.ts'
import { ensureMulticall3 } from '../src/devnet/multicall3.ts'
import { IndexerService } from '../src/indexer/service.ts'
import { createLogger } from '../src/logger.ts'
import { networkSchema } from '../src/server/config-schema.ts'
import { startHalyard } from '../src/server/runtime.ts'
import { openStorage } from '../src/storage/database.ts'
import { migrate } from '../src/storage/migrate.ts'
import type { Address, Hash } from '../src/types.ts'

const DB_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const HOLDER = '0x00000000000000000000000000000000000b3e5c' as Address

const ERC20_TXS = 40
const ERC20_PER_TX = 1000
const ERC721_TXS = 16
const ERC721_PER_TX = 500
const ERC1155_TXS = 10
const ERC1155_PER_TX = 200
const HOLDER_TOKENS = 200
const BALANCE_REQUESTS = 400
const COLD_REQUESTS = 100

const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number

async function main() {
  const anvil = await startAnvil({ extraArgs: ['--gas-limit', '2000000000', '--code-size-limit', '100000'] })
  const schema = `bench_${randomBytes(4).toString('hex')}`
  const storage = await openStorage({ databaseUrl: DB_URL, schema, poolSize: 10 })
  try {
    await migrate(storage.db)
    await ensureMulticall3(anvil.url)
    const dev = new Devnet(anvil.url)
    console.log('generating transfers on anvil …')
    const t0 = process.hrtime.bigint()
    const erc20 = await dev.deploy('DemoERC20', ['Bench', 'BNCH', 18])
    const erc721 = await dev.deploy('DemoERC721', ['Bench NFT', 'BNFT'])
    const erc1155 = await dev.deploy('DemoERC1155', ['x/{id}', 'Bench Items', 'BITM'])
    const sent: Promise<Hash>[] = []
    const gas = 1_500_000_000n
    for (let i = 0; i < ERC20_TXS; i++)
      sent.push(dev.send('DemoERC20', erc20, 'spray', [BigInt(i), BigInt(ERC20_PER_TX), 1n], { gas }))
    for (let i = 0; i < ERC721_TXS; i++)
      sent.push(
        dev.send(
          'DemoERC721',
          erc721,
          'mintRange',
          [DEV_ACCOUNT, BigInt(i * ERC721_PER_TX), BigInt(ERC721_PER_TX)],
          { gas },
        ),
      )
    for (let i = 0; i < ERC1155_TXS; i++) {
      const ids = Array.from({ length: ERC1155_PER_TX }, (_, k) => BigInt(i * ERC1155_PER_TX + k))
      sent.push(dev.send('DemoERC1155', erc1155, 'mintBatch', [DEV_ACCOUNT, ids, ids.map(() => 5n)], { gas }))
    }
    await Promise.all(sent)
    // The 200-token holder: 200 ERC-20 contracts, each minting to it.
    const tokens = await Promise.all(
      Array.from({ length: HOLDER_TOKENS }, (_, i) =>
        dev.deploy('DemoERC20', [`T${i}`, `T${i}`, 6 + (i % 13)]),
      ),
    )
    await Promise.all(tokens.map((t, i) => dev.send('DemoERC20', t, 'mint', [HOLDER, BigInt(1000 + i)])))
    const head = BigInt(await dev.rpc<string>('eth_blockNumber'))
    console.log(`  ${head} blocks in ${(ms(t0) / 1000).toFixed(1)} s`)

    // Baseline: raw eth_getLogs over the same range, fetch + parse.
    const rangeEnd = `0x${head.toString(16)}`
    let rawMs = Number.POSITIVE_INFINITY
    let logCount = 0
    for (let run = 0; run < 3; run++) {
      const t = process.hrtime.bigint()
      const res = await fetch(anvil.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'eth_getLogs',
          params: [{ fromBlock: '0x0', toBlock: rangeEnd }],
        }),
      })
      const body = (await res.json()) as { result: unknown[] }
      logCount = body.result.length
      rawMs = Math.min(rawMs, ms(t))
    }
    const rawRate = logCount / (rawMs / 1000)

    // Indexer from block 0 on a fresh PostgreSQL schema.
    const net = networkSchema.parse({
      chain: 'ethereum',
      network: 'devnet',
      chainId: 31337,
      confirmations: 0,
      blockTimeMs: 1000,
      upstreams: [{ url: anvil.url }],
      requestTimeoutMs: 120_000,
    })
    const networks = new NetworkRegistry([net])
    const indexer = new IndexerService({ storage, networks, logger: createLogger('warn'), pollMs: 20 })
    const ti = process.hrtime.bigint()
    indexer.start()
    await indexer.waitForBlock('ethereum-devnet', head, 600_000)
    const idxMs = ms(ti)
    await indexer.stop()
    await networks.close()
    const counted = await storage.db
      .selectFrom('token_transfers')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow()
    const transfers = Number(counted.n)
    const idxRate = transfers / (idxMs / 1000)

    // Balances latency through the real server (its own indexer keeps following; caught up).
    const halyard = await startHalyard({
      env: loadEnv({
        HALYARD_LOG_LEVEL: 'warn',
        HALYARD_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'halyard-bench-')),
      }),
      networks: [net],
      storage,
      secretKey: randomBytes(32),
      port: 0,
      host: '127.0.0.1',
    })
    let p50 = 0
    let p99 = 0
    let coldP50 = 0
    let coldP99 = 0
    let listed = 0
    try {
      await halyard.ctx.auth.createAccount('bench@halyard.local', 'enterprise')
      const { key } = await halyard.ctx.auth.createKey({ accountEmail: 'bench@halyard.local', env: 'test' })
      const url = `${halyard.baseUrl}/tokens/ethereum-devnet/balances/${HOLDER}?limit=100`
      const once = async () => {
        const res = await fetch(url, { headers: { 'x-api-key': key } })
        const body = (await res.json()) as { total: number }
        if (res.status !== 200) throw new Error(`balances answered ${res.status}: ${JSON.stringify(body)}`)
        return body
      }
      listed = (await once()).total
      for (let i = 0; i < 20; i++) await once() // warm-up: metadata cache, connections
      // Cold: the first request after a new block is indexed (every balance read again).
      const cold: number[] = []
      for (let i = 0; i < COLD_REQUESTS; i++) {
        await dev.rpc('anvil_mine', ['0x1'])
        await halyard.services.indexer.waitForBlock('ethereum-devnet', head + BigInt(i + 1))
        const t = process.hrtime.bigint()
        await once()
        cold.push(ms(t))
      }
      cold.sort((a, b) => a - b)
      coldP50 = pct(cold, 50)
      coldP99 = pct(cold, 99)
      // Warm: repeated requests within one block (balances reused until the head moves).
      const lat: number[] = []
      for (let i = 0; i < BALANCE_REQUESTS; i++) {
        const t = process.hrtime.bigint()
        await once()
        lat.push(ms(t))
      }
      lat.sort((a, b) => a - b)
      p50 = pct(lat, 50)
      p99 = pct(lat, 99)
    } finally {
      await halyard.close()
    }

    console.log('')
    console.log(`range: blocks 0..${head}, ${logCount} logs, ${transfers} indexed transfers (PostgreSQL)`)
    console.log(
      `baseline raw eth_getLogs:   ${rawRate.toFixed(0)} logs/s (${rawMs.toFixed(0)} ms, best of 3)`,
    )
    console.log(
      `indexer (fetch+decode+store+commit): ${idxRate.toFixed(0)} transfers/s (${idxMs.toFixed(0)} ms)`,
    )
    console.log(`ratio indexer / raw eth_getLogs: ${(idxRate / rawRate).toFixed(3)}`)
    console.log(`target ≥ 5000 transfers/s: ${idxRate >= 5000 ? 'met' : 'NOT met'}`)
    console.log(
      `balances for an address with ${HOLDER_TOKENS} tokens (${listed} entries incl. native), limit=100, sequential:`,
    )
    console.log(
      `  cold (first request after a new block, ${COLD_REQUESTS} blocks): p50 ${coldP50.toFixed(1)} ms, p99 ${coldP99.toFixed(1)} ms (target p50 ≤ 20 ms: ${coldP50 <= 20 ? 'met' : 'NOT met'})`,
    )
    console.log(
      `  warm (same block, ${BALANCE_REQUESTS} requests): p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (target p50 ≤ 20 ms: ${p50 <= 20 ? 'met' : 'NOT met'})`,
    )
  } finally {
    await storage.close()
    const c = new pg.Client({ connectionString: DB_URL })
    await c.connect()
    await c.query(`drop schema if exists ${schema} cascade`)
    await c.end()
    await anvil.stop()
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
