import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { toHex } from 'viem'
import { afterAll, beforeAll, expect } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import type { StorageBackend, TestStorage } from '../../test/helpers/storage.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { selfSignedCert } from '../net/test-cert.ts'
import type { Address, Hash } from '../types.ts'
import { Receiver } from './testdata/receiver.ts'
import { SmtpSink } from './testdata/smtp-sink.ts'

/**
 * Test-only: the shared setup of the webhook end-to-end tests (webhooks.*.test.ts), on real
 * parts: anvil, Halyard in production mode (HTTPS only, private ranges refused) with the
 * receiver's range 127.0.0.2/32 allowlisted by the operator, a real HTTPS receiver with a
 * self-signed certificate (trusted through HALYARD_WEBHOOK_CA_FILE), and a real SMTP sink.
 * `receiver.test` is pinned to 127.0.0.2 with HALYARD_WEBHOOK_HOSTS and `evil.test` to
 * 10.0.0.1 (there is no DNS server here: that is the one thing faked).
 * The retry schedule is compressed to fractions of a second.
 */
export const SCHEDULE_MS = [200, 200, 400, 400, 600]
const ENV_SCHEDULE = SCHEDULE_MS.map((ms) => `${ms}ms`).join(',')
/** Form B's 7 retries (1 s … 8 h), compressed the same way. */
export const SCHEDULE_B_MS = [100, 100, 150, 150, 200, 200, 250]
const ENV_SCHEDULE_B = SCHEDULE_B_MS.map((ms) => `${ms}ms`).join(',')

export const A = '0x00000000000000000000000000000000000a11ce' as Address
export const B = '0x00000000000000000000000000000000000000b0' as Address
export const F = '0x00000000000000000000000000000000000000f1' as Address
export const H = '0x00000000000000000000000000000000000000f2' as Address
export const R = '0x00000000000000000000000000000000000000f3' as Address
export const X = '0x00000000000000000000000000000000000000f4' as Address

export interface Api {
  status: number
  body: Record<string, unknown> & { error?: { code: string; message: string; status: number } }
}

/** A type alias, not an interface: the API body (an index signature) is cast to it. */
export type CreatedWebhook = { id: string; signing_secret: string; status: string }

export interface Delivery {
  event_id: string
  attempt: number
  status_code: number | null
  error: string | null
  duration_ms: number
  created_at: string
}

/**
 * What one describe block of the webhook tests shares. The resources are set by its beforeAll,
 * so read them inside a test (or a hook), never at collection time; the helpers may be
 * destructured anywhere.
 */
export interface WebhooksFixture {
  anvil: AnvilProcess
  storage: TestStorage
  h: TestHalyard
  dev: Devnet
  /** A key of `owner`'s account. */
  key: string
  receiver: Receiver
  smtp: SmtpSink
  /** The e-mail address of the account that owns the webhooks. */
  readonly owner: string
  usd: Address
  nft: Address
  items: Address
  api(method: string, p: string, body?: unknown, k?: string): Promise<Api>
  urlFor(name: string): string
  create(name: string, event_type: string, config: unknown): Promise<CreatedWebhook>
  synced(): Promise<bigint>
  sendEth(to: Address, wei: bigint): Promise<Hash>
  deliveries(id: string): Promise<Delivery[]>
}

/** Registers the beforeAll/afterAll of the enclosing describe block on `backend`. */
export function webhooksFixture(backend: StorageBackend): WebhooksFixture {
  // The resources are filled in by beforeAll below, before any test runs.
  const fx = { owner: `owner-${backend.name}@test.local` } as WebhooksFixture

  fx.api = async (method, p, body, k = fx.key) => {
    const res = await fetch(`${fx.h.baseUrl}${p}`, {
      method,
      headers: { 'x-api-key': k, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as Api['body'] }
  }
  fx.urlFor = (name) => `https://receiver.test:${fx.receiver.port}/wh/${name}`
  fx.create = async (name, event_type, config) => {
    const res = await fx.api('POST', '/webhooks', {
      url: fx.urlFor(name),
      chain: 'ethereum-devnet',
      event_type,
      config,
    })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return res.body as CreatedWebhook
  }
  fx.synced = async () => {
    const head = BigInt(await fx.dev.rpc<string>('eth_blockNumber'))
    await fx.h.halyard.services.indexer.waitForBlock('ethereum-devnet', head)
    return head
  }
  // Waits for the receipt: anvil may answer eth_sendTransaction before the block is queryable,
  // and a test that then waits for "the head" would wait for the block before.
  fx.sendEth = async (to, wei) => {
    const hash = await fx.dev.rpc<Hash>('eth_sendTransaction', [{ from: DEV_ACCOUNT, to, value: toHex(wei) }])
    await fx.dev.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    return hash
  }
  fx.deliveries = async (id) =>
    (await fx.api('GET', `/webhooks/${id}/deliveries?limit=100`)).body.deliveries as Delivery[]

  beforeAll(async () => {
    fx.anvil = await startAnvil()
    fx.storage = await backend.open()
    fx.dev = new Devnet(fx.anvil.url)
    fx.usd = await fx.dev.deploy('DemoERC20', ['Dollar', 'DUSD', 6])
    fx.nft = await fx.dev.deploy('DemoERC721', ['Art', 'ART'])
    fx.items = await fx.dev.deploy('DemoERC1155', ['x/{id}', 'Items', 'ITM'])

    const tls = selfSignedCert()
    const dir = mkdtempSync(path.join(tmpdir(), 'halyard-wh-'))
    writeFileSync(path.join(dir, 'ca.pem'), tls.cert)
    fx.receiver = await new Receiver('127.0.0.2', tls).start()

    fx.smtp = await new SmtpSink().start()

    fx.h = await startTestHalyard({
      networks: [anvilNetwork(fx.anvil)],
      storage: fx.storage,
      devMode: false,
      env: {
        SMTP_URL: fx.smtp.url,
        HALYARD_WEBHOOK_RETRY_SCHEDULE: ENV_SCHEDULE,
        HALYARD_WEBHOOK_RETRY_SCHEDULE_B: ENV_SCHEDULE_B,
        // A small cap, so a test reaches it within the free plan's 10 requests per second.
        HALYARD_WEBHOOK_MAX_WEBHOOKS: 'free=3',
        HALYARD_WEBHOOK_TIMEOUT: '3s',
        HALYARD_WEBHOOK_ALLOW_CIDRS: '127.0.0.2/32',
        HALYARD_WEBHOOK_HOSTS: 'receiver.test=127.0.0.2,evil.test=10.0.0.1',
        HALYARD_WEBHOOK_CA_FILE: path.join(dir, 'ca.pem'),
      },
    })
    fx.key = await fx.h.createKey({ email: fx.owner })
    await fx.synced()
  })
  afterAll(async () => {
    await fx.h?.close()
    await fx.storage?.close()
    await fx.receiver?.stop()
    await fx.smtp?.stop()
    await fx.anvil?.stop()
  })

  return fx
}
