/**
 * A standalone indexer process for the crash test (indexer.crash.test.ts): indexes one anvil
 * network into the given database and prints `cursor N` after every commit, so the test can
 * SIGKILL it mid-backfill. A consumer that pauses per block keeps the backfill slow enough to
 * be interrupted; it is a real consumer inside the indexer's transaction.
 */
import { NetworkRegistry } from '../../chains/registry.ts'
import { createLogger } from '../../logger.ts'
import { networkSchema } from '../../server/config-schema.ts'
import { openStorage } from '../../storage/database.ts'
import { migrate } from '../../storage/migrate.ts'
import { IndexerService } from '../service.ts'

const url = process.env.ANVIL_URL as string
const storage = await openStorage({
  databaseUrl: process.env.WORKER_DATABASE_URL,
  schema: process.env.WORKER_SCHEMA,
  dataDir: process.env.WORKER_PGLITE_DIR,
  poolSize: 3,
})
await migrate(storage.db)
const networks = new NetworkRegistry([
  networkSchema.parse({
    chain: 'ethereum',
    network: 'devnet',
    chainId: 31337,
    confirmations: 0,
    blockTimeMs: 1000,
    upstreams: [{ url }],
    indexer: { maxBlockRange: Number(process.env.WORKER_RANGE ?? 4) },
  }),
])
const indexer = new IndexerService({ storage, networks, logger: createLogger('silent'), pollMs: 50 })
indexer.addConsumer({
  name: 'slow',
  async onBlock(_trx, block) {
    if (block.transfers.length > 0) await new Promise((r) => setTimeout(r, 40))
  },
  async onRollback() {},
})
indexer.start()
let last = -1n
setInterval(async () => {
  const c = await indexer.cursor('ethereum-devnet')
  if (c && c.number !== last) {
    last = c.number
    process.stdout.write(`cursor ${c.number}\n`)
  }
}, 20)
