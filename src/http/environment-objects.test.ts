import { mkdtempSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import path from 'node:path'
import { toHex } from 'viem'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { Receiver } from '../../test/fixtures/webhooks/receiver.ts'
import { anvilNetwork, call, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { ENTRY_POINT_V07 } from '../aa/contracts.ts'
import { ensureAccountAbstraction } from '../devnet/account-abstraction.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import type { Storage } from '../storage/database.ts'

/**
 * The environment rule on objects: a test key may not create on mainnet (the gate), and it
 * may not see, change or use a mainnet object its account's live key made either. Every id
 * route of webhooks and gas policies, and the sponsorship endpoints that name a policy, answer
 * it exactly as they answer an id that is not the account's (404, same body); lists leave the
 * objects out and their totals with them. The live key still sees and manages everything.
 */

const MAINNET = 'ethereum'
const DEVNET = 'ethereum-devnet'
const OTHER_WEBHOOK = 'wh_00000000000000000000beef'
const OTHER_POLICY = 'gp_00000000000000000000beef'
const OTHER_EVENT = 'evt_0000000000000000000beef0'
const HOLDER = '0x000000000000000000000000000000000000a11c'

/** A v0.7 op the sponsor parses and prices: the policy check decides the answer. */
const op = {
  sender: '0x00000000000000000000000000000000000a11ce',
  nonce: '0x0',
  callData: '0x',
  callGasLimit: toHex(200_000),
  verificationGasLimit: toHex(150_000),
  preVerificationGas: toHex(50_000),
  maxFeePerGas: toHex(1_000_000_000),
  maxPriorityFeePerGas: toHex(1_000_000_000),
}

describeEachStorage('test keys and mainnet objects on $name', (backend) => {
  let devnet: AnvilProcess
  let mainnet: AnvilProcess
  let storage: Storage
  let receiver: Receiver
  let h: TestHalyard
  let live: string
  let test: string
  /** The live key's objects: on mainnet (hidden from the test key) and on the devnet. */
  const ids = { webhook: '', devWebhook: '', policy: '', devPolicy: '', event: '' }

  const send = async (key: string, method: string, url: string, body?: unknown) => {
    const res = await fetch(`${h.baseUrl}${url}`, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: res.status, json: (await res.json()) as Record<string, unknown> }
  }

  beforeAll(async () => {
    ;[devnet, mainnet] = await Promise.all([startAnvil(), startAnvil({ chainId: 1 })])
    storage = await backend.open()
    receiver = await new Receiver('127.0.0.1').start()
    // Dev mode: its paymaster signer and paymasters (data dir) make both networks sponsored.
    const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-env-objects-'))
    const devAa = await ensureAccountAbstraction(devnet.url, dataDir)
    const mainAa = await ensureAccountAbstraction(mainnet.url, dataDir)
    const noIndexer = { indexer: { enabled: false } }
    h = await startTestHalyard({
      networks: [
        anvilNetwork(devnet, { ...noIndexer, accountAbstraction: devAa.config }),
        anvilNetwork(mainnet, {
          ...noIndexer,
          network: 'mainnet',
          chainId: 1,
          accountAbstraction: mainAa.config,
        }),
      ],
      storage,
      devMode: true,
      env: { HALYARD_DATA_DIR: dataDir },
    })
    const email = `env-${Date.now()}@test.local`
    live = await h.createKey({ env: 'live', email })
    test = await h.createKey({ env: 'test', email })

    const hook = (chain: string, name: string) => ({
      url: `http://127.0.0.1:${receiver.port}/wh/${name}`,
      chain,
      event_type: 'address_activity',
      config: { addresses: [HOLDER] },
    })
    const created = async (url: string, body: unknown) => {
      const r = await send(live, 'POST', url, body)
      expect(r.status).toBe(201)
      return r.json.id as string
    }
    ids.webhook = await created('/webhooks', hook(MAINNET, 'main'))
    ids.devWebhook = await created('/webhooks', hook(DEVNET, 'dev'))
    ids.policy = await created('/gas/policies', {
      name: 'main',
      chain: MAINNET,
      rules: { max_operations: 1 },
    })
    ids.devPolicy = await created('/gas/policies', {
      name: 'dev',
      chain: DEVNET,
      rules: { max_operations: 1 },
    })
    const queued = await send(live, 'POST', `/webhooks/${ids.webhook}/test`)
    expect(queued.status).toBe(200)
    ids.event = queued.json.id as string
  }, 180_000)

  afterAll(async () => {
    await h?.close()
    await receiver?.stop()
    await storage?.close()
    await Promise.all([devnet?.stop(), mainnet?.stop()])
  })

  /**
   * Every route that names a webhook or a policy by id: [name, the request for given ids]. Each
   * is sent with the mainnet objects' ids, then with ids of no object of this account.
   */
  type Ids = { webhook: string; policy: string; event: string }
  const routes: Array<[string, (i: Ids) => [string, string, unknown?]]> = [
    ['GET webhook', (i) => ['GET', `/webhooks/${i.webhook}`]],
    ['PATCH webhook url', (i) => ['PATCH', `/webhooks/${i.webhook}`, { url: 'http://127.0.0.1:9/x' }]],
    ['PATCH webhook status', (i) => ['PATCH', `/webhooks/${i.webhook}`, { status: 'paused' }]],
    ['PATCH webhook config', (i) => ['PATCH', `/webhooks/${i.webhook}`, { config: { addresses: [] } }]],
    ['GET deliveries', (i) => ['GET', `/webhooks/${i.webhook}/deliveries`]],
    ['POST test event', (i) => ['POST', `/webhooks/${i.webhook}/test`]],
    ['POST rotate-secret', (i) => ['POST', `/webhooks/${i.webhook}/rotate-secret`]],
    ['POST redeliver', (i) => ['POST', `/webhooks/${i.webhook}/deliveries/${i.event}/redeliver`]],
    ['GET events', (i) => ['GET', `/webhooks/${i.webhook}/events`]],
    ['GET event', (i) => ['GET', `/webhooks/${i.webhook}/events/${i.event}`]],
    [
      'POST redeliver-failed',
      (i) => [
        'POST',
        `/webhooks/${i.webhook}/redeliver-failed`,
        { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' },
      ],
    ],
    ['GET policy', (i) => ['GET', `/gas/policies/${i.policy}`]],
    ['PATCH policy rules', (i) => ['PATCH', `/gas/policies/${i.policy}`, { rules: {} }]],
    ['PATCH policy status', (i) => ['PATCH', `/gas/policies/${i.policy}`, { status: 'paused' }]],
    [
      'POST /gas/sponsor on the devnet',
      (i) => ['POST', '/gas/sponsor', { chain: DEVNET, policy_id: i.policy, user_operation: op }],
    ],
    [
      'pm_getPaymasterStubData on the devnet',
      (i) => [
        'POST',
        '/paymaster/ethereum/devnet',
        call('pm_getPaymasterStubData', [
          op,
          ENTRY_POINT_V07,
          toHex(devnet.chainId),
          { policy_id: i.policy },
        ]),
      ],
    ],
    [
      'pm_getPaymasterData on the devnet',
      (i) => [
        'POST',
        '/paymaster/ethereum/devnet',
        call('pm_getPaymasterData', [op, ENTRY_POINT_V07, toHex(devnet.chainId), { policy_id: i.policy }]),
      ],
    ],
    // Last: without the rule they would take the objects away from the routes above.
    ['DELETE webhook', (i) => ['DELETE', `/webhooks/${i.webhook}`]],
    ['DELETE policy', (i) => ['DELETE', `/gas/policies/${i.policy}`]],
  ]

  it.each(routes)('a test key on a mainnet object: %s answers as for an id not its own', async (_, req) => {
    const hidden = req(ids)
    const other = req({ webhook: OTHER_WEBHOOK, policy: OTHER_POLICY, event: OTHER_EVENT })
    const got = await send(test, hidden[0], hidden[1], hidden[2])
    const unknown = await send(test, other[0], other[1], other[2])
    const swap = (v: unknown) =>
      JSON.stringify(v)
        .replaceAll(ids.webhook, OTHER_WEBHOOK)
        .replaceAll(ids.policy, OTHER_POLICY)
        .replaceAll(ids.event, OTHER_EVENT)
    expect(got.status).toBe(unknown.status)
    expect(swap(got.json)).toBe(swap(unknown.json))
    if (hidden[1].startsWith('/paymaster')) {
      expect(got.json).toMatchObject({ error: { code: -32602, message: `policy ${ids.policy} not found` } })
    } else {
      expect(got.status).toBe(404)
      expect(got.json).toMatchObject({ error: { code: 'not_found' } })
    }
  })

  it('leaves the mainnet objects as they were, and the live key manages them', async () => {
    const wh = await send(live, 'GET', `/webhooks/${ids.webhook}`)
    expect(wh.status).toBe(200)
    expect(wh.json).toMatchObject({
      status: 'active',
      url: `http://127.0.0.1:${receiver.port}/wh/main`,
      config: { addresses: [HOLDER] },
    })
    // Not re-keyed, paused or re-pointed: the row was never written.
    expect(wh.json.updated_at).toBe(wh.json.created_at)
    const policy = await send(live, 'GET', `/gas/policies/${ids.policy}`)
    expect(policy.status).toBe(200)
    expect(policy.json).toMatchObject({ status: 'active', rules: { max_operations: 1 } })
    expect(policy.json.updated_at).toBe(policy.json.created_at)
    expect((await send(live, 'GET', `/webhooks/${ids.webhook}/deliveries`)).status).toBe(200)
  })

  it('lists leave mainnet objects out of a test key’s pages and totals', async () => {
    const hooks = await send(test, 'GET', '/webhooks?limit=1')
    expect(hooks.json).toMatchObject({ total: 1, page: 1 })
    expect((hooks.json.webhooks as { id: string }[]).map((w) => w.id)).toEqual([ids.devWebhook])
    const page2 = await send(test, 'GET', '/webhooks?limit=1&page=2')
    expect(page2.json).toMatchObject({ total: 1, webhooks: [] })
    const policies = await send(test, 'GET', '/gas/policies')
    expect(policies.json).toMatchObject({ total: 1 })
    expect((policies.json.policies as { id: string }[]).map((p) => p.id)).toEqual([ids.devPolicy])
    // Its own environment's objects it still manages.
    expect((await send(test, 'GET', `/webhooks/${ids.devWebhook}`)).status).toBe(200)
    expect((await send(test, 'GET', `/gas/policies/${ids.devPolicy}`)).status).toBe(200)

    const liveHooks = await send(live, 'GET', '/webhooks')
    expect(liveHooks.json).toMatchObject({ total: 2 })
    expect(new Set((liveHooks.json.webhooks as { id: string }[]).map((w) => w.id))).toEqual(
      new Set([ids.webhook, ids.devWebhook]),
    )
    expect((await send(live, 'GET', '/gas/policies')).json).toMatchObject({ total: 2 })
  })

  it('shows tenants no instance (hostname:pid) in the delivery history', async () => {
    const history = await until(
      'the test event delivered',
      async () => {
        const r = await send(live, 'GET', `/webhooks/${ids.webhook}/deliveries`)
        const d = r.json.deliveries as Record<string, unknown>[]
        return d.some((a) => a.status_code === 200) ? r : null
      },
      60_000,
    )
    const text = JSON.stringify(history.json)
    expect(text).not.toContain(`${hostname()}:${process.pid}`)
    for (const a of history.json.deliveries as Record<string, unknown>[])
      expect(a).not.toHaveProperty('instance')
    // Kept for the operator: the attempt row still names the instance.
    const rows = await storage.db
      .selectFrom('webhook_attempts')
      .select('instance')
      .where('webhook_id', '=', ids.webhook)
      .execute()
    expect(rows.some((r) => r.instance === `${hostname()}:${process.pid}`)).toBe(true)
  })
})
