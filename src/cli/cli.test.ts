import { execFileSync } from 'node:child_process'
import { mkdtempSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { runCli, type ServerChild, spawnHalyard } from '../../test/helpers/cli.ts'
import { call, postRpc } from '../../test/helpers/halyard.ts'

/** PIDs of processes whose command line mentions `needle` (anvil runs with its state file in the data dir). */
function processesMentioning(needle: string): number[] {
  try {
    const out = execFileSync('pgrep', ['-f', needle], { encoding: 'utf8' })
    return out
      .split('\n')
      .filter(Boolean)
      .map(Number)
      .filter((pid) => pid !== process.pid)
  } catch {
    return [] // pgrep exits 1 when nothing matches
  }
}

async function startDev(dataDir: string): Promise<{ server: ServerChild; baseUrl: string; key: string }> {
  const server = spawnHalyard(['dev'], { HALYARD_DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '' })
  const [, baseUrl] = await server.waitFor(/HTTP base URL:\s+(\S+)/)
  const [, key] = await server.waitFor(/API key:\s+(\S+)/)
  return { server, baseUrl: baseUrl as string, key: key as string }
}

const lastLine = (s: string) => s.trim().split('\n').at(-1) ?? ''

describe('halyard dev (npm start)', () => {
  it('serves the devnet with a persistent key, accepts CLI keys, and leaves no anvil behind', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-dev-'))
    const stateFile = path.join(dataDir, 'anvil-state.json')
    const first = await startDev(dataDir)
    const rpc = `${first.baseUrl}/rpc/ethereum/devnet`
    try {
      expect(first.key).toMatch(/^halyard_test_[0-9A-Za-z]{32}$/)
      const a = await postRpc(rpc, first.key, call('eth_chainId'))
      expect(a.json).toEqual({ jsonrpc: '2.0', id: 1, result: '0x7a69' })
      const b = await postRpc(rpc, undefined, call('eth_chainId'), { authorization: `Bearer ${first.key}` })
      expect(b.json).toEqual({ jsonrpc: '2.0', id: 1, result: '0x7a69' })
      expect(statSync(path.join(dataDir, 'dev-key.json')).mode & 0o777).toBe(0o600)
      expect(processesMentioning(stateFile).length).toBeGreaterThan(0)

      // While the server holds the PGlite data dir, the CLI goes through its loopback admin API.
      const created = await runCli(
        ['keys', 'create', '--account', 'dev@halyard.local', '--env', 'test', '--scopes', 'rpc:read'],
        { HALYARD_DATA_DIR: dataDir, DATABASE_URL: '' },
      )
      expect(created.code, created.stderr).toBe(0)
      const cliKey = lastLine(created.stdout)
      expect(cliKey).toMatch(/^halyard_test_/)
      expect((await postRpc(rpc, cliKey, call('eth_chainId'))).status).toBe(200)

      const listed = await runCli(['keys', 'list', '--account', 'dev@halyard.local'], {
        HALYARD_DATA_DIR: dataDir,
        DATABASE_URL: '',
      })
      expect(listed.code).toBe(0)
      expect(listed.stdout.split('\n')[0]).toBe('ID\tPREFIX\tENV\tSTATE\tSCOPES\tNAME')
      expect(listed.stdout).not.toContain(cliKey) // the full key is shown once, at creation

      // The ERC-4337 conformance suite's URL: the printed key reaches the operator controls
      // (debug_bundler_*) with no setting; another account's key, with every scope, does not.
      const root = (key: string) => `${first.baseUrl}/alchemy/ethereum-devnet/v2/${key}`
      const dump = call('debug_bundler_dumpMempool', ['0x0000000071727De22E5E9d8BAf0edAc6f37da032'])
      expect((await postRpc(root(first.key), undefined, dump)).json).toEqual({
        jsonrpc: '2.0',
        id: 1,
        result: [],
      })
      const env = { HALYARD_DATA_DIR: dataDir, DATABASE_URL: '' }
      expect((await runCli(['accounts', 'create', '--email', 'tenant@example.com'], env)).code).toBe(0)
      const tenant = await runCli(['keys', 'create', '--account', 'tenant@example.com', '--env', 'test'], env)
      const refused = await postRpc(root(lastLine(tenant.stdout)), undefined, dump)
      expect(refused.status).toBe(403)
      expect(JSON.stringify(refused.json)).toContain('operator control')
    } finally {
      const code = await first.server.stop('SIGTERM')
      expect(code).toBe(0)
    }
    expect(processesMentioning(stateFile)).toEqual([])

    // No server running: the CLI opens the data dir itself.
    const offline = await runCli(['accounts', 'create', '--email', 'ops@example.com', '--plan', 'free'], {
      HALYARD_DATA_DIR: dataDir,
      DATABASE_URL: '',
    })
    expect(offline.code, offline.stderr).toBe(0)
    const offKey = await runCli(['keys', 'create', '--account', 'ops@example.com', '--env', 'test'], {
      HALYARD_DATA_DIR: dataDir,
      DATABASE_URL: '',
    })
    expect(offKey.code, offKey.stderr).toBe(0)
    const offlineKey = lastLine(offKey.stdout)

    const second = await startDev(dataDir)
    try {
      expect(second.key).toBe(first.key) // the same key on every start
      const res = await postRpc(`${second.baseUrl}/rpc/ethereum/devnet`, offlineKey, call('eth_chainId'))
      expect(res.status).toBe(200)
    } finally {
      expect(await second.server.stop('SIGINT')).toBe(0)
    }
    expect(processesMentioning(stateFile)).toEqual([])
  }, 180_000) // two dev starts (anvil, PGlite, ERC-4337 deploy) and four CLI processes

  it('refuses a second server on the same PGlite data dir', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-dev-'))
    const first = await startDev(dataDir)
    try {
      const second = spawnHalyard(['dev'], { HALYARD_DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '' })
      await second.waitFor(/another Halyard \(pid \d+\) is serving the data dir/)
      expect(await second.stop()).not.toBe(0)
    } finally {
      await first.server.stop()
    }
    expect(processesMentioning(path.join(dataDir, 'anvil-state.json'))).toEqual([])
  }, 120_000)
})

describe('halyard serve: configuration errors stop start-up naming the field', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-serve-'))
  const secret = 'ab'.repeat(32)
  const write = (name: string, body: string) => {
    const file = path.join(dataDir, name)
    writeFileSync(file, body)
    return file
  }
  const base = {
    HALYARD_DATA_DIR: dataDir,
    DATABASE_URL: '',
    REDIS_URL: '',
    HALYARD_SECRET_KEY: secret,
    HALYARD_PUBLIC_URL: 'https://halyard.example.com',
  }

  it('names a wrong field in the YAML file', async () => {
    const file = write(
      'bad.yaml',
      'networks:\n  - chain: ethereum\n    network: mainnet\n    chainId: one\n    upstreams:\n      - url: http://127.0.0.1:1\n',
    )
    const run = await runCli(['serve', '--config', file], base)
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/networks\[0\]\.chainId/)
  })

  it('names an upstream URL that is not http(s)', async () => {
    const file = write(
      'bad-url.yaml',
      'networks:\n  - chain: ethereum\n    network: mainnet\n    chainId: 1\n    upstreams:\n      - url: ftp://node\n',
    )
    const run = await runCli(['serve', '--config', file], base)
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/networks\[0\]\.upstreams\[0\]\.url/)
  })

  it('reports YAML syntax errors, a missing file and a missing --config', async () => {
    const broken = write('broken.yaml', 'networks: [\n')
    expect((await runCli(['serve', '--config', broken], base)).stderr).toMatch(/broken\.yaml/)
    expect((await runCli(['serve', '--config', path.join(dataDir, 'nope.yaml')], base)).stderr).toMatch(
      /nope\.yaml/,
    )
    expect((await runCli(['serve'], base)).stderr).toMatch(/--config/)
  })

  it('names a bad environment value', async () => {
    const file = write(
      'ok.yaml',
      'networks:\n  - chain: ethereum\n    network: mainnet\n    chainId: 1\n    upstreams:\n      - url: http://127.0.0.1:1\n',
    )
    const port = await runCli(['serve', '--config', file], { ...base, HALYARD_PORT: 'eighty' })
    expect(port.code).toBe(1)
    expect(port.stderr).toMatch(/HALYARD_PORT/)
    const noSecret = await runCli(['serve', '--config', file], { ...base, HALYARD_SECRET_KEY: '' })
    expect(noSecret.code).toBe(1)
    expect(noSecret.stderr).toMatch(/HALYARD_SECRET_KEY/)
    // The dashboard's sign-in links need the public URL: serve refuses to guess it.
    const noPublic = await runCli(['serve', '--config', file], { ...base, HALYARD_PUBLIC_URL: '' })
    expect(noPublic.code).toBe(1)
    expect(noPublic.stderr).toMatch(/HALYARD_PUBLIC_URL is required/)
    for (const bad of [
      'halyard.example.com',
      'ftp://halyard.example.com',
      'https://h.example.com/app',
      'https://u:p@h.example.com',
    ])
      expect(
        (await runCli(['serve', '--config', file], { ...base, HALYARD_PUBLIC_URL: bad })).stderr,
        bad,
      ).toMatch(/HALYARD_PUBLIC_URL: must be scheme:\/\/host\[:port\]/)
    const proxies = await runCli(['serve', '--config', file], {
      ...base,
      HALYARD_TRUSTED_PROXIES: '10.0.0.0/8,proxy.internal',
    })
    expect(proxies.code).toBe(1)
    expect(proxies.stderr).toMatch(
      /HALYARD_TRUSTED_PROXIES: "proxy.internal" is not an IP address or CIDR range/,
    )
    const prefix = await runCli(['serve', '--config', file], {
      ...base,
      HALYARD_TRUSTED_PROXIES: '10.0.0.0/33',
    })
    expect(prefix.stderr).toMatch(/HALYARD_TRUSTED_PROXIES: "10.0.0.0\/33"/)
    const db = await runCli(['serve', '--config', file], { ...base, DATABASE_URL: 'mysql://x' })
    expect(db.stderr).toMatch(/DATABASE_URL/)
    // Workers on PGlite and memory limits would each have their own database and limits.
    const cluster = await runCli(['serve', '--config', file], { ...base, HALYARD_WORKERS: '2' })
    expect(cluster.code).toBe(1)
    expect(cluster.stderr).toMatch(/HALYARD_WORKERS above 1 needs DATABASE_URL and REDIS_URL/)
  })

  it('migrates a fresh data dir once and then reports it up to date', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'halyard-migrate-'))
    const env = { HALYARD_DATA_DIR: dir, DATABASE_URL: '' }
    const first = await runCli(['migrate'], env)
    expect(first.code, first.stderr).toBe(0)
    expect(first.stdout).toMatch(/applied: 0001_accounts_keys/)
    const again = await runCli(['migrate'], env)
    expect(again.stdout).toMatch(/up to date/)
  })

  it('rejects unknown commands and options with usage', async () => {
    const run = await runCli(['frobnicate'], base)
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/unknown command: frobnicate/)
  })
})
