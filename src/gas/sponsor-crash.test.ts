import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { createWalletClient, encodeFunctionData, http, parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { TestAccount } from '../../test/fixtures/bundler/bundler-fixture.ts'
import {
  ACCOUNT,
  NETWORK,
  type SponsorFixture,
  sponsorBody,
  startSponsorFixture,
  withSponsorship,
} from '../../test/fixtures/gas/sponsor-fixture.ts'
import { describeEach, type ServiceCase } from '../../test/helpers/services.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { entryPointAbi } from '../aa/contracts.ts'
import { DEV_ACCOUNT } from '../devnet/demo.ts'
import { createLogger } from '../logger.ts'
import { StaticPriceSource } from '../prices/sources.ts'
import { openStorage, type Storage } from '../storage/database.ts'
import { migrate } from '../storage/migrate.ts'
import type { Address } from '../types.ts'
import { PolicyService } from './policy-service.ts'
import { PolicyStore } from './policy-store.ts'
import { type SponsorResult, SponsorService } from './sponsor-service.ts'
import { SponsorSettlement } from './sponsor-settlement.ts'

/**
 * kill -9 between signing and mining: a child process signs a sponsorship and is SIGKILLed
 * before the op is sent. The reservation is in the database (it was committed before the
 * signature left); the op is mined afterwards and a new process settles it.
 */
const WORKER = path.join(import.meta.dirname, '../../test/fixtures/gas/sponsor-crash-worker.ts')

interface Target extends ServiceCase {
  env: Record<string, string>
  open(): Promise<Storage>
  cleanup(): Promise<void>
}

function targets(): Target[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-sponsor-crash-'))
  const url = process.env.DATABASE_URL ?? ''
  const schema = `t_${randomBytes(6).toString('hex')}`
  return [
    {
      name: 'pglite',
      env: { WORKER_PGLITE_DIR: dir },
      open: () => openStorage({ dataDir: dir }),
      cleanup: async () => {},
    },
    {
      name: 'postgres',
      needs: ['DATABASE_URL'],
      env: { WORKER_DATABASE_URL: url, WORKER_SCHEMA: schema },
      open: () => openStorage({ databaseUrl: url, schema, poolSize: 2 }),
      cleanup: async () => {
        const c = new pg.Client({ connectionString: url })
        await c.connect()
        await c.query(`drop schema if exists ${schema} cascade`)
        await c.end()
      },
    },
  ]
}

describeEach(targets(), 'sponsorship killed with SIGKILL between signing and mining on $name', (target) => {
  let fx: SponsorFixture
  let child: ChildProcess | undefined

  beforeAll(async () => {
    const [pglite] = storageBackends()
    if (!pglite) throw new Error('no storage backend')
    // The fixture's own database is unused here: the target's is what the child writes.
    fx = await startSponsorFixture(pglite)
  }, 120_000)
  afterAll(async () => {
    child?.kill('SIGKILL')
    await fx?.close()
    await target.cleanup()
  })

  it('keeps the reservation; the op mined afterwards is settled by a new process', {
    timeout: 120_000,
  }, async () => {
    // A paymaster of our own, so the child can hold its signer key.
    const key = generatePrivateKey()
    const paymaster = await fx.deployPaymaster(privateKeyToAccount(key).address.toLowerCase() as Address)
    const dev = createWalletClient({ transport: http(fx.anvil.url), account: DEV_ACCOUNT })
    const funded = await dev.sendTransaction({
      to: fx.aa.entryPoints.v07,
      data: encodeFunctionData({ abi: entryPointAbi, functionName: 'depositTo', args: [paymaster] }),
      value: parseEther('1'),
      chain: null,
    })
    await fx.client.waitForTransactionReceipt({ hash: funded })

    let storage = await target.open()
    await migrate(storage.db)
    const policy = await new PolicyService(new PolicyStore(storage.db), () => true).create(ACCOUNT, {
      name: 'crash',
      chain: NETWORK,
      rules: { max_operations: 1 },
    })
    await storage.close()

    const acct = await TestAccount.create(fx, 'v07')
    const op = await fx.mintOp(acct)
    child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
      env: {
        ...process.env,
        ...target.env,
        ANVIL_URL: fx.anvil.url,
        WORKER_CHAIN_ID: String(fx.anvil.chainId),
        WORKER_ENTRY_POINT: fx.aa.entryPoints.v07,
        WORKER_PAYMASTER: paymaster,
        WORKER_SIGNER_KEY: key,
        WORKER_ACCOUNT: ACCOUNT,
        WORKER_BODY: JSON.stringify(sponsorBody(op, policy.id)),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString()
    })
    child.stderr?.on('data', (d: Buffer) => process.stderr.write(d))
    const exited = new Promise<void>((r) => child?.once('exit', () => r()))
    const line = await until('the child signed', () => /signed (\{.*\})\n/.exec(out)?.[1], 60_000)
    child.kill('SIGKILL')
    await exited
    const result = JSON.parse(line) as SponsorResult

    storage = await target.open()
    try {
      const svc = new SponsorService({
        storage,
        signer: privateKeyToAccount(key),
        networks: [
          {
            slug: NETWORK,
            chainId: fx.anvil.chainId,
            rpc: fx.rpc,
            paymasters: [{ version: 'v07', entryPoint: fx.aa.entryPoints.v07, paymaster }],
            prices: new StaticPriceSource({ native: '2000' }),
          },
        ],
      })
      expect((await svc.store.sponsorship(result.sponsorship_id))?.state).toBe('reserved')
      // The reservation still counts: the policy's one operation is taken.
      await expect(svc.sponsor({ accountId: ACCOUNT }, sponsorBody(op, policy.id))).rejects.toThrow(
        /max_operations/,
      )

      const receipt = await fx.handleOps(await acct.sign(withSponsorship(op, result)))
      expect(receipt.status).toBe('success')
      const settlement = new SponsorSettlement({
        storage,
        store: svc.store,
        logger: createLogger('silent'),
        networks: [
          {
            slug: NETWORK,
            chainId: fx.anvil.chainId,
            rpc: fx.rpc,
            paymasters: [{ entryPoint: fx.aa.entryPoints.v07, version: 'v07', paymaster }],
            startLookback: 10_000,
          },
        ],
      })
      while (await settlement.pollOnce(NETWORK)) {}
      expect(await svc.store.sponsorship(result.sponsorship_id)).toMatchObject({
        state: 'settled',
        tx_hash: receipt.transactionHash,
      })
      const spend = (
        await new PolicyService(new PolicyStore(storage.db), () => true).get(
          { accountId: ACCOUNT },
          policy.id,
        )
      ).spend
      expect(spend).toMatchObject({ operations: 1, settled_operations: 1, reserved_wei: '0' })
    } finally {
      await storage.close()
    }
  })
})
