import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../../test/helpers/cli.ts'
import {
  anvilNetwork,
  call,
  postRpc,
  startTestHalyard,
  type TestHalyard,
} from '../../test/helpers/halyard.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'
import { writeAdminFile } from './data-dir.ts'

const APP = 'https://app.example.com'
const keyIdOf = (out: string) => /^key (\S+) /m.exec(out)?.[1] ?? ''
const lastLine = (s: string) => s.trim().split('\n').at(-1) ?? ''

/**
 * `halyard keys create … --allowed-*` and `halyard keys update KEY_ID …`, both ways the CLI
 * reaches the data: opening a PGlite data dir itself, and through a running server's loopback
 * admin API (the server holds the data dir).
 */
describe('halyard keys: allowlist flags', () => {
  it('without a server: create with lists, update and clear them, a bad entry named', async () => {
    const env = { HALYARD_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'halyard-cli-')), DATABASE_URL: '' }
    expect((await runCli(['accounts', 'create', '--email', 'cli@example.com'], env)).code).toBe(0)
    const created = await runCli(
      [
        'keys',
        'create',
        '--account',
        'cli@example.com',
        '--env',
        'test',
        '--allowed-origins',
        `${APP},*.example.org`,
        '--allowed-ips',
        '10.0.0.0/8, 2001:db8::/32',
        '--allowed-methods',
        'eth_chainId,eth_call',
      ],
      env,
    )
    expect(created.code, created.stderr).toBe(0)
    expect(created.stdout).toContain(`allowed origins: ${APP},*.example.org`)
    expect(created.stdout).toContain('allowed ips: 10.0.0.0/8,2001:db8::/32')
    expect(created.stdout).toContain('allowed contracts: any')
    const id = keyIdOf(created.stdout)
    const updated = await runCli(
      [
        'keys',
        'update',
        id,
        '--clear-allowed-origins',
        '--allowed-contracts',
        '0x00000000000000000000000000000000000000AA',
      ],
      env,
    )
    expect(updated.code, updated.stderr).toBe(0)
    expect(updated.stdout).toContain('allowed origins: any')
    expect(updated.stdout).toContain('allowed contracts: 0x00000000000000000000000000000000000000aa')
    expect(updated.stdout).toContain('allowed methods: eth_chainId,eth_call')
    const bad = await runCli(
      ['keys', 'update', id, '--allowed-methods', 'eth_chainId,eth_nosuch_thing!'],
      env,
    )
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('allowed_methods: entry "eth_nosuch_thing!"')
    const none = await runCli(['keys', 'update', id], env)
    expect(none.code).toBe(2)
    expect(none.stderr).toContain('give at least one --allowed-')
  }, 120_000)

  describe('through a running server', () => {
    let anvil: AnvilProcess
    let storage: Storage
    let h: TestHalyard
    const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-cli-admin-'))
    const token = 'cli-allowlists-admin-token'

    beforeAll(async () => {
      anvil = await startAnvil()
      storage = await storageBackends()[0]!.open()
      h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage, extra: { adminToken: token } })
      writeAdminFile(dataDir, { origin: h.halyard.origin, token, pid: process.pid })
      await h.halyard.ctx.auth.createAccount('srv@example.com', 'enterprise')
    })
    afterAll(async () => {
      await h?.close()
      await storage?.close()
      await anvil?.stop()
    })

    it('keys create and keys update go through the admin API and take effect at once', async () => {
      const env = { HALYARD_DATA_DIR: dataDir, DATABASE_URL: '' }
      const rpc = `${h.baseUrl}/rpc/ethereum/devnet`
      const created = await runCli(
        ['keys', 'create', '--account', 'srv@example.com', '--env', 'test', '--allowed-origins', APP],
        env,
      )
      expect(created.code, created.stderr).toBe(0)
      const key = lastLine(created.stdout)
      expect((await postRpc(rpc, key, call('eth_chainId'))).status).toBe(403)
      expect((await postRpc(rpc, key, call('eth_chainId'), { origin: APP })).status).toBe(200)
      const cleared = await runCli(['keys', 'update', keyIdOf(created.stdout), '--allowed-origins', ''], env)
      expect(cleared.code, cleared.stderr).toBe(0)
      expect((await postRpc(rpc, key, call('eth_chainId'))).status).toBe(200)
      const bad = await runCli(
        ['keys', 'update', keyIdOf(created.stdout), '--allowed-ips', '10.0.0.0/99'],
        env,
      )
      expect(bad.code).toBe(1)
      expect(bad.stderr).toContain('allowed_ips: entry "10.0.0.0/99"')
    }, 120_000)
  })
})
