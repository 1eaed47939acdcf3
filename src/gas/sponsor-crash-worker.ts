import { privateKeyToAccount } from 'viem/accounts'
import { FailoverPool } from '../chains/upstream-pool.ts'
import { StaticPriceSource } from '../prices/sources.ts'
import { openStorage } from '../storage/database.ts'
import type { Address, Hex } from '../types.ts'
import { SponsorService } from './sponsor-service.ts'

/**
 * Child process of sponsor-crash.test.ts: signs one sponsorship, prints it, then waits to be
 * killed with SIGKILL (between signing and mining). Test support only.
 */
const env = (name: string): string => {
  const v = process.env[name]
  if (!v) throw new Error(`${name} is not set`)
  return v
}

const storage = await openStorage(
  process.env.WORKER_PGLITE_DIR
    ? { dataDir: process.env.WORKER_PGLITE_DIR }
    : { databaseUrl: env('WORKER_DATABASE_URL'), schema: env('WORKER_SCHEMA'), poolSize: 2 },
)
const rpc = new FailoverPool([{ url: env('ANVIL_URL') }], 20_000)
const svc = new SponsorService({
  storage,
  signer: privateKeyToAccount(env('WORKER_SIGNER_KEY') as Hex),
  networks: [
    {
      slug: 'ethereum-devnet',
      chainId: Number(env('WORKER_CHAIN_ID')),
      rpc,
      paymasters: [
        {
          version: 'v07',
          entryPoint: env('WORKER_ENTRY_POINT') as Address,
          paymaster: env('WORKER_PAYMASTER') as Address,
        },
      ],
      prices: new StaticPriceSource({ native: '2000' }),
    },
  ],
})
const result = await svc.sponsor({ accountId: env('WORKER_ACCOUNT') }, JSON.parse(env('WORKER_BODY')))
process.stdout.write(`signed ${JSON.stringify(result)}\n`)
// Holds the database open until the kill.
setInterval(() => {}, 60_000)
