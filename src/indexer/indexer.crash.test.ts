import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeEach, type ServiceCase } from '../../test/helpers/services.ts'
import { until } from '../../test/helpers/until.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { Devnet } from '../devnet/demo.ts'
import { openStorage, type Storage } from '../storage/database.ts'
import { migrate } from '../storage/migrate.ts'
import { TRANSFER_TOPIC } from './decode.ts'

const WORKER = path.join(import.meta.dirname, '../../test/fixtures/indexer/crash-worker.ts')

interface Target extends ServiceCase {
  env(): Record<string, string>
  open(): Promise<Storage>
  /** Work a worker would otherwise do first (PGlite's initdb takes seconds), done up front. */
  prepare(): Promise<void>
  cleanup(): Promise<void>
}

function targets(): Target[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-crash-'))
  const list: Target[] = [
    {
      name: 'pglite',
      env: () => ({ WORKER_PGLITE_DIR: dir }),
      open: () => openStorage({ dataDir: dir }),
      prepare: async () => {
        const s = await openStorage({ dataDir: dir })
        await migrate(s.db)
        await s.close()
      },
      cleanup: async () => {},
    },
  ]
  // Reported skipped (describeEach) without DATABASE_URL: nothing below runs then.
  const url = process.env.DATABASE_URL ?? ''
  const schema = `t_${randomBytes(6).toString('hex')}`
  list.push({
    name: 'postgres',
    needs: ['DATABASE_URL'],
    env: () => ({ WORKER_DATABASE_URL: url, WORKER_SCHEMA: schema }),
    open: () => openStorage({ databaseUrl: url, schema, poolSize: 2 }),
    prepare: async () => {},
    cleanup: async () => {
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      await c.query(`drop schema if exists ${schema} cascade`)
      await c.end()
    },
  })
  return list
}

function startWorker(env: Record<string, string>): {
  child: ChildProcess
  cursor: () => bigint
  exited: Promise<void>
} {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let cursor = -1n
  let buf = ''
  child.stdout?.on('data', (d: Buffer) => {
    buf += d.toString()
    for (const m of buf.matchAll(/cursor (\d+)/g)) cursor = BigInt(m[1] as string)
    buf = buf.slice(buf.lastIndexOf('\n') + 1)
  })
  child.stderr?.on('data', (d: Buffer) => process.stderr.write(d))
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  return { child, cursor: () => cursor, exited }
}

describeEach(targets(), 'indexer killed mid-backfill on $name', (target) => {
  let anvil: AnvilProcess
  let head: bigint
  let expected: number
  /** Transactions in blocks 0..head: one external native transfer each (none moves value inside). */
  let transactions: number

  beforeAll(async () => {
    const prepared = target.prepare()
    anvil = await startAnvil()
    const dev = new Devnet(anvil.url)
    const token = await dev.deploy('DemoERC20', ['C', 'C', 18])
    const nft = await dev.deploy('DemoERC721', ['C7', 'C7'])
    // ~40 blocks with transfers, interleaved with empty blocks: the backfill takes many ranges.
    // Automine mines each transaction as it arrives, so receipts need not be polled; a revert
    // would show in the eth_getLogs count checked below.
    for (let i = 0; i < 20; i++) {
      await dev.send('DemoERC20', token, 'spray', [BigInt(i), 25n, 1n], { wait: false })
      await dev.send(
        'DemoERC721',
        nft,
        'mintRange',
        ['0x1111111111111111111111111111111111111111', BigInt(i * 10), 5n],
        { wait: false },
      )
      await dev.rpc('anvil_mine', ['0x3'])
    }
    head = BigInt(await dev.rpc<string>('eth_blockNumber'))
    const logs = await dev.rpc<unknown[]>('eth_getLogs', [
      { fromBlock: '0x0', toBlock: `0x${head.toString(16)}`, topics: [TRANSFER_TOPIC] },
    ])
    expected = logs.length
    expect(expected).toBe(20 * 25 + 20 * 5)
    transactions = 0
    for (let n = 0n; n <= head; n++)
      transactions += Number(
        BigInt(await dev.rpc<string>('eth_getBlockTransactionCountByNumber', [`0x${n.toString(16)}`])),
      )
    await prepared
  })
  afterAll(async () => {
    await anvil?.stop()
    await target.cleanup()
  })

  it('resumes without losing or duplicating a transfer (count equals eth_getLogs)', async () => {
    const env = { ANVIL_URL: anvil.url, WORKER_RANGE: '4', ...target.env() }
    const first = startWorker(env)
    await until('a few commits', () => first.cursor() >= 12n, 60_000)
    first.child.kill('SIGKILL')
    await first.exited
    const killedAt = first.cursor()
    expect(killedAt).toBeLessThan(head)

    const second = startWorker(env)
    try {
      await until('the head', () => second.cursor() >= head, 60_000)
    } finally {
      second.child.kill('SIGTERM')
      await second.exited
    }
    const storage = await target.open()
    try {
      const rows = await storage.db
        .selectFrom('token_transfers')
        .select((eb) => [eb.fn.countAll<string>().as('n')])
        .executeTakeFirstOrThrow()
      expect(Number(rows.n)).toBe(expected)
      const distinct = await storage.db
        .selectFrom('token_transfers')
        .select(['tx_hash', 'log_index'])
        .distinct()
        .execute()
      expect(distinct.length).toBe(expected)
      const native = await storage.db
        .selectFrom('native_transfers')
        .select(['category', (eb) => eb.fn.countAll<string>().as('n')])
        .groupBy('category')
        .execute()
      // category 0: external (migration 0160).
      expect(native.map((r) => [r.category, Number(r.n)])).toEqual([[0, transactions]])
    } finally {
      await storage.close()
    }
  }, 180_000) // two worker processes, each waited for up to 60 s, plus start-up under tsx
})
