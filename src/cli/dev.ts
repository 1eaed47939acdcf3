import { existsSync, readFileSync } from 'node:fs'
import { z } from 'zod'
import type { AuthService } from '../auth/service.ts'
import type { Env } from '../config/env.ts'
import type { NetworkConfig } from '../config/file.ts'
import { startAnvil } from '../devnet/anvil.ts'
import { openStorage } from '../storage/database.ts'
import { dataFiles, ensureDir, readAdminFile, writeSecretFile } from './data-dir.ts'
import type { runServer } from './run-server.ts'

export const DEV_EMAIL = 'dev@halyard.local'
const devKeySchema = z.object({ email: z.string(), key: z.string() })

export interface DevOptions {
  blockTime: number
  /** Deploy sample ERC-20/721/1155 contracts and give the dev account tokens (src/devnet/demo.ts). */
  demo?: boolean
}

/** `halyard dev` (= `npm start`): anvil devnet + PGlite + in-memory limits, one command. */
export async function dev(env: Env, opts: DevOptions): Promise<void> {
  ensureDir(env.dataDir)
  // Checked before anything starts: PGlite must never be opened on a data dir a live server holds.
  const holder = env.DATABASE_URL ? undefined : readAdminFile(env.dataDir)
  if (holder) throw new Error(`another Halyard (pid ${holder.pid}) is serving the data dir ${env.dataDir}`)
  const anvilStarting = startAnvil({
    chainId: 31337,
    blockTime: opts.blockTime,
    statePath: dataFiles(env.dataDir).anvilState,
  })
  // anvil boots in its own process while this one loads the server's and the devnet tooling's
  // modules (seconds through tsx): the two waits overlap instead of adding up.
  const modules = Promise.all([
    import('./run-server.ts'),
    import('../devnet/account-abstraction.ts'),
    import('../devnet/multicall3.ts'),
    import('../devnet/demo.ts'),
  ])
  // The database opens meanwhile too (PGlite: a second or more), ready when the server wants it.
  const storageOpening = openStorage({ databaseUrl: env.DATABASE_URL, dataDir: env.dataDir })
  // Both are awaited below; a failure elsewhere first must not leave them unhandled.
  modules.catch(() => {})
  storageOpening.catch(() => {})
  let anvil: Awaited<typeof anvilStarting>
  try {
    anvil = await anvilStarting
  } catch (err) {
    await closeQuietly(storageOpening)
    throw err
  }
  const network: NetworkConfig = {
    chain: 'ethereum',
    network: 'devnet',
    kind: 'evm',
    chainId: 31337,
    confirmations: 0,
    finalityDepth: 2,
    blockTimeMs: Math.max(1, opts.blockTime) * 1000,
    nativeCurrency: { symbol: 'ETH', decimals: 18 },
    debugMethods: true,
    requestTimeoutMs: 10_000,
    upstreams: [{ url: anvil.url, ws: anvil.wsUrl, weight: 1, archive: true }],
  }
  let run: Awaited<ReturnType<typeof runServer>>
  let demoLines: string[] = []
  let aaLines: string[] = []
  try {
    const [{ runServer }, { ensureAccountAbstraction }, { ensureMulticall3 }, { ensureDemo }] = await modules
    await ensureMulticall3(anvil.url)
    const aa = await ensureAccountAbstraction(anvil.url, env.dataDir)
    network.accountAbstraction = aa.config
    aaLines = [
      `  ERC-4337:       EntryPoint v0.7 ${aa.config.entryPoints.v07}, v0.6 ${aa.config.entryPoints.v06}`,
      `                  SimpleAccountFactory v0.7 ${aa.config.simpleAccountFactory.v07}, VerifyingPaymaster ${aa.config.paymaster}`,
    ]
    if (opts.demo) demoLines = await ensureDemo(anvil.url, env.dataDir)
    const storage = await storageOpening
    run = await runServer({
      env,
      networks: [network],
      devMode: true,
      storage,
      cleanup: () => anvil.stop(),
      // The dev account is the operator: the key printed below reaches debug_bundler_* (the
      // ERC-4337 conformance suite needs them); other accounts' keys do not.
      operatorEmails: [DEV_EMAIL],
    })
  } catch (err) {
    await closeQuietly(storageOpening)
    await anvil.stop()
    throw err
  }
  const { halyard, stopped } = run
  const key = await ensureDevKey(halyard.ctx.auth, env.dataDir)
  const devAccount = await halyard.ctx.auth.accountByEmail(DEV_EMAIL)
  const signInLink = await halyard.services.dashboard.createLink(devAccount.id, halyard.publicOrigin)
  console.log(
    [
      '',
      'Halyard is running on a local devnet (anvil, chain id 31337).',
      `  HTTP base URL:  ${halyard.baseUrl}`,
      `  JSON-RPC:       ${halyard.baseUrl}/rpc/ethereum/devnet`,
      `  WebSocket URL:  ${halyard.wsOrigin}/v1/ws/ethereum/devnet?apiKey=<key>`,
      `  API key:        ${key}`,
      `  Dashboard:      ${signInLink}`,
      '                  (sign-in link for dev@halyard.local: works once, for 15 minutes)',
      ...aaLines,
      '',
      'Try:',
      `  curl -s ${halyard.baseUrl}/rpc/ethereum/devnet -H 'X-API-Key: ${key}' \\`,
      `    -d '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}'`,
      '',
      ...demoLines,
      'Ctrl-C stops Halyard and the devnet.',
      '',
    ].join('\n'),
  )
  await stopped
}

/** The dev account's test key: created on first start, kept (0600) and reused after. */
async function ensureDevKey(auth: AuthService, dataDir: string): Promise<string> {
  const file = dataFiles(dataDir).devKey
  if (existsSync(file)) {
    const saved = devKeySchema.safeParse(JSON.parse(readFileSync(file, 'utf8')))
    if (saved.success && (await auth.isKeyActive(saved.data.key))) return saved.data.key
  }
  try {
    await auth.accountByEmail(DEV_EMAIL)
  } catch {
    await auth.createAccount(DEV_EMAIL, 'growth')
  }
  const created = await auth.createKey({ accountEmail: DEV_EMAIL, env: 'test', name: 'dev' })
  writeSecretFile(file, JSON.stringify({ email: DEV_EMAIL, key: created.key }))
  return created.key
}

async function closeQuietly(storage: ReturnType<typeof openStorage>): Promise<void> {
  await storage.then((s) => s.close()).catch(() => {})
}
