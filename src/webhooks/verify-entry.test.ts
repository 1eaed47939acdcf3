import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { toHex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { openTestPGlite } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import type { Storage } from '../storage/database.ts'

/**
 * The webhook verifier as a user gets it: the package's public entry `halyard/webhooks`, built
 * (`npm run build:webhooks`, what `npm pack` runs) and imported by a receiver in plain
 * JavaScript under plain Node, resolved through package.json "exports" by the package's own
 * name. A running Halyard (dev mode, anvil, PGlite) delivers a real on-chain event in form A and
 * in form B to that receiver over HTTP; the receiver's checks accept both, and refuse the same
 * deliveries with a changed body or checked too late. The Python check of
 * docs/webhooks-verify.md, run with the machine's python3, agrees on the same deliveries.
 */

const repo = path.resolve(import.meta.dirname, '../..')
const WATCHED = '0x00000000000000000000000000000000000ab5e1'

type Received = {
  path: string
  body: string
  headers: Record<string, string>
  check: { ok: boolean; form?: string; reason?: string }
}

let anvil: AnvilProcess
let storage: Storage
let h: TestHalyard
let receiver: ChildProcess
let receiverUrl: string
let key: string
const secrets: Record<string, string> = {}

async function startReceiver(): Promise<void> {
  receiver = spawn(process.execPath, ['test/fixtures/webhooks/verify-receiver.mjs'], {
    cwd: repo,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let err = ''
  receiver.stderr!.on('data', (c: Buffer) => {
    err += c.toString()
  })
  const port = await new Promise<string>((resolve, reject) => {
    receiver.stdout!.on('data', (c: Buffer) => {
      const m = /listening (\d+)/.exec(c.toString())
      if (m) resolve(m[1]!)
    })
    receiver.on('exit', (code) => reject(new Error(`receiver exited ${code}: ${err}`)))
  })
  receiverUrl = `http://127.0.0.1:${port}`
}

const post = async (url: string, body: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

beforeAll(async () => {
  // The build `npm pack` runs: dist/webhooks/ is what the package's "exports" point at.
  execFileSync(path.join(repo, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.webhooks.json'], { cwd: repo })
  await startReceiver()
  anvil = await startAnvil()
  storage = await openTestPGlite()
  // Dev mode: webhooks may point at a loopback http:// receiver.
  h = await startTestHalyard({ networks: [anvilNetwork(anvil)], storage, devMode: true })
  key = await h.createKey({ plan: 'enterprise' })
  for (const format of ['A', 'B']) {
    const created = await post(
      `${h.baseUrl}/webhooks`,
      {
        url: `${receiverUrl}/${format}`,
        chain: 'ethereum-devnet',
        event_type: 'address_activity',
        config: { addresses: [WATCHED] },
        format,
      },
      { 'x-api-key': key },
    )
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    secrets[format] = created.body.signing_secret as string
    await post(`${receiverUrl}/secret`, { path: `/${format}`, secret: secrets[format] })
  }
  // A real on-chain event both webhooks match.
  const dev = new Devnet(anvil.url)
  const hash = await dev.rpc<`0x${string}`>('eth_sendTransaction', [
    { from: DEV_ACCOUNT, to: WATCHED, value: toHex(7n) },
  ])
  await dev.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
})
afterAll(async () => {
  receiver?.kill('SIGTERM')
  await h?.close()
  await storage?.close()
  await anvil?.stop()
})

const receivedFor = async (format: string): Promise<Received> =>
  until(
    `a form ${format} delivery`,
    async () => {
      const all = (await (await fetch(`${receiverUrl}/received`)).json()) as Received[]
      return all.find((r) => r.path === `/${format}`)
    },
    60_000,
  )

/** The receiver's verifyWebhook (halyard/webhooks) on a delivery, at `nowMs` if given. */
const check = async (r: Received, secret: string, body = r.body, nowMs?: number) =>
  (await post(`${receiverUrl}/check`, { body, headers: r.headers, secret, now: nowMs })).body

/** The same delivery with one byte of its body changed. */
const tampered = (r: Received) => {
  const raw = Buffer.from(r.body, 'base64')
  const at = raw.indexOf('"7"')
  if (at < 0) throw new Error('no value "7" in the delivery')
  raw[at + 1] = '8'.charCodeAt(0)
  return raw.toString('base64')
}

/** When the delivery would be checked too late: past form A's tolerance or form B's age limit. */
const tooLate = (r: Received, format: string) =>
  format === 'A'
    ? (Number(r.headers['x-service-timestamp']) + 301) * 1000
    : Date.parse(JSON.parse(Buffer.from(r.body, 'base64').toString()).createdAt) + 86_401_000

describe('halyard/webhooks, the package entry', () => {
  it('resolves to the built JavaScript with types, through package.json "exports"', () => {
    const resolved = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', "console.log(import.meta.resolve('halyard/webhooks'))"],
      { cwd: repo, encoding: 'utf8' },
    ).trim()
    expect(resolved).toBe(`file://${repo}/dist/webhooks/verify.js`)
    const pkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8'))
    expect(pkg.exports['./webhooks'].types).toBe('./dist/webhooks/verify.d.ts')
    expect(readFileSync(path.join(repo, 'dist/webhooks/verify.d.ts'), 'utf8')).toMatch(
      /export declare function verifyWebhook/,
    )
  })

  for (const format of ['A', 'B'] as const) {
    it(`form ${format}: accepts a real delivery, refuses a changed body and an old timestamp`, async () => {
      const r = await receivedFor(format)
      // The receiver accepted it as it arrived (and answered 200).
      expect(r.check).toEqual({ ok: true, form: format })
      const event = JSON.parse(Buffer.from(r.body, 'base64').toString())
      expect(event.data.value).toBe('7')
      expect(await check(r, secrets[format]!)).toEqual({ ok: true, form: format })
      expect(await check(r, secrets[format === 'A' ? 'B' : 'A']!)).toMatchObject({ ok: false })
      expect(await check(r, secrets[format]!, tampered(r))).toEqual({
        ok: false,
        reason: 'signature mismatch',
      })
      expect(await check(r, secrets[format]!, r.body, tooLate(r, format))).toMatchObject({
        ok: false,
        reason: expect.stringMatching(format === 'A' ? /timestamp/ : /createdAt/),
      })
    })
  }
})

describe('the Python check of docs/webhooks-verify.md', () => {
  it('accepts the real deliveries of both forms and refuses a changed body or an old timestamp', async () => {
    const doc = readFileSync(path.join(repo, 'docs/webhooks-verify.md'), 'utf8')
    const code = /```python\n([\s\S]*?)```/.exec(doc)?.[1]
    expect(code).toBeDefined()
    const dir = mkdtempSync(path.join(tmpdir(), 'halyard-verify-py-'))
    const script = path.join(dir, 'verify.py')
    // The documented function as printed, then a driver: one JSON case per stdin line.
    writeFileSync(
      script,
      `${code}\nimport base64, sys\nfor line in sys.stdin:\n    c = json.loads(line)\n    ok, why = verify_webhook(base64.b64decode(c["body"]), c["headers"], c["secret"], now=c.get("now"))\n    print(json.dumps([ok, why]))\n`,
    )
    const cases: { body: string; headers: Record<string, string>; secret: string; now?: number }[] = []
    const want: [boolean, string | RegExp][] = []
    for (const format of ['A', 'B'] as const) {
      const r = await receivedFor(format)
      const base = { headers: r.headers, secret: secrets[format]! }
      cases.push({ ...base, body: r.body })
      want.push([true, format])
      cases.push({ ...base, body: tampered(r) })
      want.push([false, 'signature mismatch'])
      cases.push({ ...base, body: r.body, now: tooLate(r, format) / 1000 })
      want.push([false, format === 'A' ? /seconds from now/ : /createdAt/])
    }
    const out = execFileSync('python3', [script], {
      input: cases.map((c) => JSON.stringify(c)).join('\n'),
      encoding: 'utf8',
    })
    const got = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as [boolean, string])
    expect(got).toHaveLength(want.length)
    got.forEach(([ok, why], i) => {
      expect(ok, `case ${i}: ${why}`).toBe(want[i]![0])
      expect(why).toMatch(want[i]![1])
    })
  })
})
