import { createHmac } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pad, toHex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilNetwork, startTestHalyard, type TestHalyard } from '../../test/helpers/halyard.ts'
import { storageBackends, type TestStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { TRANSFER_TOPIC, ZERO_ADDRESS } from '../indexer/decode.ts'
import { selfSignedCert } from '../net/test-cert.ts'
import type { Address, Hash } from '../types.ts'
import { Receiver } from './testdata/receiver.ts'
import { SmtpSink } from './testdata/smtp-sink.ts'
import { verifyWebhook } from './verify.ts'

/**
 * End to end on real parts: anvil, Halyard in production mode (HTTPS only, private ranges
 * refused) with the receiver's range 127.0.0.2/32 allowlisted by the operator, a real HTTPS
 * receiver with a self-signed certificate (trusted through HALYARD_WEBHOOK_CA_FILE), and a
 * real SMTP sink. `receiver.test` is pinned to 127.0.0.2 with HALYARD_WEBHOOK_HOSTS and
 * `evil.test` to 10.0.0.1 (there is no DNS server here: that is the one thing faked).
 * The retry schedule is compressed to fractions of a second.
 */
const SCHEDULE_MS = [200, 200, 400, 400, 600]
const ENV_SCHEDULE = SCHEDULE_MS.map((ms) => `${ms}ms`).join(',')

const A = '0x00000000000000000000000000000000000a11ce' as Address
const B = '0x00000000000000000000000000000000000000b0' as Address
const F = '0x00000000000000000000000000000000000000f1' as Address
const H = '0x00000000000000000000000000000000000000f2' as Address
const R = '0x00000000000000000000000000000000000000f3' as Address
const X = '0x00000000000000000000000000000000000000f4' as Address

interface Api {
  status: number
  body: Record<string, unknown> & { error?: { code: string; message: string; status: number } }
}

describe.each(storageBackends())('webhooks on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: TestStorage
  let h: TestHalyard
  let dev: Devnet
  let key: string
  let receiver: Receiver
  let smtp: SmtpSink
  const OWNER = `owner-${backend.name}@test.local`
  let usd: Address
  let nft: Address
  let items: Address

  const api = async (method: string, p: string, body?: unknown, k = key): Promise<Api> => {
    const res = await fetch(`${h.baseUrl}${p}`, {
      method,
      headers: { 'x-api-key': k, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as Api['body'] }
  }
  const urlFor = (name: string) => `https://receiver.test:${receiver.port}/wh/${name}`
  const create = async (name: string, event_type: string, config: unknown) => {
    const res = await api('POST', '/webhooks', {
      url: urlFor(name),
      chain: 'ethereum-devnet',
      event_type,
      config,
    })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    return res.body as { id: string; signing_secret: string; status: string }
  }
  const synced = async () => {
    const head = BigInt(await dev.rpc<string>('eth_blockNumber'))
    await h.halyard.services.indexer.waitForBlock('ethereum-devnet', head)
    return head
  }
  // Waits for the receipt: anvil may answer eth_sendTransaction before the block is queryable,
  // and a test that then waits for "the head" would wait for the block before.
  const sendEth = async (to: Address, wei: bigint) => {
    const hash = await dev.rpc<Hash>('eth_sendTransaction', [{ from: DEV_ACCOUNT, to, value: toHex(wei) }])
    await dev.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    return hash
  }
  const deliveries = async (id: string) =>
    (await api('GET', `/webhooks/${id}/deliveries?limit=100`)).body.deliveries as Array<{
      event_id: string
      attempt: number
      status_code: number | null
      error: string | null
      duration_ms: number
      created_at: string
    }>

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await backend.open()
    dev = new Devnet(anvil.url)
    usd = await dev.deploy('DemoERC20', ['Dollar', 'DUSD', 6])
    nft = await dev.deploy('DemoERC721', ['Art', 'ART'])
    items = await dev.deploy('DemoERC1155', ['x/{id}', 'Items', 'ITM'])

    const tls = selfSignedCert()
    const dir = mkdtempSync(path.join(tmpdir(), 'halyard-wh-'))
    writeFileSync(path.join(dir, 'ca.pem'), tls.cert)
    receiver = await new Receiver('127.0.0.2', tls).start()

    smtp = await new SmtpSink().start()

    h = await startTestHalyard({
      networks: [anvilNetwork(anvil)],
      storage,
      devMode: false,
      env: {
        SMTP_URL: smtp.url,
        HALYARD_WEBHOOK_RETRY_SCHEDULE: ENV_SCHEDULE,
        HALYARD_WEBHOOK_TIMEOUT: '3s',
        HALYARD_WEBHOOK_ALLOW_CIDRS: '127.0.0.2/32',
        HALYARD_WEBHOOK_HOSTS: 'receiver.test=127.0.0.2,evil.test=10.0.0.1',
        HALYARD_WEBHOOK_CA_FILE: path.join(dir, 'ca.pem'),
      },
    })
    key = await h.createKey({ email: OWNER })
    await synced()
  })
  afterAll(async () => {
    await h?.close()
    await storage?.close()
    await receiver?.stop()
    await smtp?.stop()
    await anvil?.stop()
  })

  it('delivers each event type once, signed, with the envelope and data of spec 6.1', async () => {
    const aa = await create('aa', 'address_activity', { addresses: [A.toUpperCase().replace('0X', '0x')] })
    const tt = await create('tt', 'token_transfer', { contracts: [usd], min_value: '1000' })
    const nf = await create('nft', 'nft_transfer', { contracts: [nft, items] })
    const lg = await create('log', 'log', { addresses: [usd], topics: [TRANSFER_TOPIC, null, pad(A)] })
    expect(aa.status).toBe('active')
    expect(aa.signing_secret).toMatch(/^whsec_/)

    // All five transactions go into one block, so the mined_transaction webhook can name a hash first.
    await dev.rpc('evm_setAutomine', [false])
    // Not sendEth: with automine off there is no receipt to wait for until anvil_mine below.
    const native = await dev.rpc<Hash>('eth_sendTransaction', [
      { from: DEV_ACCOUNT, to: A, value: toHex(10n ** 18n) },
    ])
    const mintA = await dev.send('DemoERC20', usd, 'mint', [A, 5000n], { wait: false })
    await dev.send('DemoERC20', usd, 'mint', [B, 10n], { wait: false })
    const nftTx = await dev.send('DemoERC721', nft, 'mint', [A, 7n, ''], { wait: false })
    const itemsTx = await dev.send('DemoERC1155', items, 'mint', [A, 3n, 5n], { wait: false })
    const mt = await create('mt', 'mined_transaction', { tx_hashes: [nftTx] })
    await dev.rpc('anvil_mine', ['0x1'])
    await dev.rpc('evm_setAutomine', [true])
    const block = Number(await synced())
    const blockHash = (await dev.client.getBlock({ blockNumber: BigInt(block) })).hash
    const gasUsed = (await dev.client.getTransactionReceipt({ hash: nftTx })).gasUsed.toString()

    const counts = { aa: 2, tt: 1, nft: 2, log: 1, mt: 1 }
    await until('all deliveries', () =>
      Object.entries(counts).every(([name, n]) => receiver.acked(name).length >= n),
    )
    const chain = { chain: 'ethereum-devnet', block_number: block }
    expect(receiver.acked('aa').map((r) => r.body.data)).toEqual([
      {
        ...chain,
        tx_hash: native,
        from: DEV_ACCOUNT,
        to: A,
        value: '1000000000000000000',
        asset: 'ETH',
        contract: null,
        direction: 'incoming',
      },
      {
        ...chain,
        tx_hash: mintA,
        from: ZERO_ADDRESS,
        to: A,
        value: '5000',
        asset: 'DUSD',
        contract: usd,
        direction: 'incoming',
      },
    ])
    expect(receiver.acked('tt').map((r) => r.body.data)).toEqual([
      {
        ...chain,
        tx_hash: mintA,
        contract: usd,
        from: ZERO_ADDRESS,
        to: A,
        value: '5000',
        symbol: 'DUSD',
        decimals: 6,
      },
    ])
    expect(receiver.acked('nft').map((r) => r.body.data)).toEqual([
      {
        ...chain,
        tx_hash: nftTx,
        contract: nft,
        from: ZERO_ADDRESS,
        to: A,
        token_id: '7',
        standard: 'ERC721',
        quantity: 1,
      },
      {
        ...chain,
        tx_hash: itemsTx,
        contract: items,
        from: ZERO_ADDRESS,
        to: A,
        token_id: '3',
        standard: 'ERC1155',
        quantity: 5,
      },
    ])
    const [logEvent] = receiver.acked('log').map((r) => r.body.data)
    expect(logEvent).toEqual({
      ...chain,
      tx_hash: mintA,
      block_hash: blockHash,
      log_index: expect.any(Number),
      address: usd,
      topics: [TRANSFER_TOPIC, pad(ZERO_ADDRESS), pad(A)],
      data: pad(toHex(5000n)),
    })
    expect(receiver.acked('mt').map((r) => r.body.data)).toEqual([
      {
        ...chain,
        tx_hash: nftTx,
        block_hash: blockHash,
        transaction_index: 3,
        from: DEV_ACCOUNT,
        to: nft,
        value: '0',
        status: 'success',
        gas_used: gasUsed,
      },
    ])

    const secrets: Record<string, string> = {
      aa: aa.signing_secret,
      tt: tt.signing_secret,
      nft: nf.signing_secret,
      log: lg.signing_secret,
      mt: mt.signing_secret,
    }
    const ids: Record<string, string> = { aa: aa.id, tt: tt.id, nft: nf.id, log: lg.id, mt: mt.id }
    const types: Record<string, string> = {
      aa: 'address_activity',
      tt: 'token_transfer',
      nft: 'nft_transfer',
      log: 'log',
      mt: 'mined_transaction',
    }
    for (const name of Object.keys(counts)) {
      const got = receiver.acked(name)
      // Exactly once: as many requests as events, no id twice.
      expect(receiver.received.filter((r) => r.name === name)).toHaveLength(got.length)
      expect(new Set(got.map((r) => r.body.id)).size).toBe(got.length)
      for (const r of got) {
        expect(r.headers['content-type']).toBe('application/json')
        const ts = r.headers['x-service-timestamp'] as string
        expect(ts).toMatch(/^\d+$/)
        const expected = createHmac('sha256', secrets[name] as string)
          .update(`${ts}.${r.raw}`)
          .digest('hex')
        expect(r.headers['x-service-signature']).toBe(expected)
        expect(verifyWebhook(r.raw, r.headers, secrets[name] as string)).toEqual({ ok: true })
        expect(verifyWebhook(r.raw, r.headers, 'whsec_wrong')).toEqual({
          ok: false,
          reason: 'signature mismatch',
        })
        expect(Object.keys(r.body).sort()).toEqual(['created_at', 'data', 'event_type', 'id', 'webhook_id'])
        expect(r.body).toMatchObject({ event_type: types[name], webhook_id: ids[name] })
        expect(r.body.id).toMatch(/^evt_[0-9a-f]{24}$/)
        expect(new Date(r.body.created_at as string).toISOString()).toBe(r.body.created_at)
      }
    }
    // Attempts are recorded after the receiver has answered, so wait for both to be written.
    await until('both attempts recorded', async () => (await deliveries(aa.id)).length >= 2)
    const history = await deliveries(aa.id)
    expect(history.map((d) => [d.attempt, d.status_code, d.error])).toEqual([
      [1, 200, null],
      [1, 200, null],
    ])
    expect(history.map((d) => d.event_id)).toEqual(receiver.acked('aa').map((r) => r.body.id))
  })

  it('reads, lists, pages and filters without ever showing the secret; other accounts see nothing', async () => {
    const list = await api('GET', '/webhooks?limit=2')
    expect(list.status).toBe(200)
    expect(list.body).toMatchObject({ page: 1, total: 5 })
    const items = list.body.webhooks as Array<Record<string, unknown>>
    expect(items).toHaveLength(2)
    expect(Object.keys(items[0] as object).sort()).toEqual([
      'chain',
      'created_at',
      'event_type',
      'id',
      'status',
      'url',
    ])
    const page3 = await api('GET', '/webhooks?limit=2&page=3')
    expect((page3.body.webhooks as unknown[]).length).toBe(1)
    expect((await api('GET', '/webhooks?status=paused')).body).toMatchObject({ webhooks: [], total: 0 })
    const one = await api('GET', `/webhooks/${items[0]?.id}`)
    expect(one.status).toBe(200)
    expect(one.body).not.toHaveProperty('signing_secret')
    expect(JSON.stringify(one.body)).not.toContain('whsec_')
    const other = await h.createKey()
    expect((await api('GET', `/webhooks/${items[0]?.id}`, undefined, other)).status).toBe(404)
    expect((await api('GET', '/webhooks', undefined, other)).body).toMatchObject({ total: 0 })
    expect((await api('GET', '/webhooks?limit=101')).body.error?.message).toMatch(/limit/)
    const noScope = await h.createKey({ scopes: ['rpc:read'] })
    expect((await api('GET', '/webhooks', undefined, noScope)).status).toBe(403)
  })

  it('sends a signed test event through the real delivery path', async () => {
    const wh = await create('test-event', 'address_activity', { addresses: [X] })
    const res = await api('POST', `/webhooks/${wh.id}/test`)
    expect(res.status).toBe(200)
    await until('test event', () => receiver.acked('test-event').length === 1)
    const [got] = receiver.acked('test-event')
    expect(got?.body).toMatchObject({
      id: res.body.id,
      webhook_id: wh.id,
      event_type: 'address_activity',
      test: true,
    })
    expect(verifyWebhook(got?.raw ?? '', got?.headers ?? {}, wh.signing_secret)).toEqual({ ok: true })
  })

  it('retries a failing receiver exactly 5 times on schedule, pauses, e-mails once, and resumes on PATCH', async () => {
    receiver.mode('fail', 'fail')
    const wh = await create('fail', 'address_activity', { addresses: [F] })
    await sendEth(F, 1n)
    await until('paused', async () => (await api('GET', `/webhooks/${wh.id}`)).body.status === 'paused')
    const history = await deliveries(wh.id)
    expect(history.map((d) => [d.attempt, d.status_code])).toEqual([1, 2, 3, 4, 5, 6].map((n) => [n, 500]))
    expect(new Set(history.map((d) => d.event_id)).size).toBe(1)
    const arrivals = receiver.received.filter((r) => r.name === 'fail').map((r) => r.at)
    expect(arrivals).toHaveLength(6)
    // Retry n never goes out before its scheduled delay after the previous attempt.
    for (let i = 0; i < 5; i++)
      expect((arrivals[i + 1] as number) - (arrivals[i] as number)).toBeGreaterThanOrEqual(
        SCHEDULE_MS[i] as number,
      )
    await until('the e-mail', () => smtp.mails.length >= 1)
    expect(smtp.mails).toHaveLength(1)
    expect(smtp.mails[0]?.to).toEqual([OWNER])
    expect(smtp.mails[0]?.raw).toContain(wh.id)

    // Paused: new activity makes no events.
    await sendEth(F, 2n)
    await synced()
    receiver.mode('fail', 'ok')
    const patched = await api('PATCH', `/webhooks/${wh.id}`, { status: 'active' })
    expect(patched.status).toBe(200)
    expect(Object.keys(patched.body).sort()).toEqual([
      'chain',
      'event_type',
      'id',
      'status',
      'updated_at',
      'url',
    ])
    expect(patched.body.status).toBe('active')
    await sendEth(F, 3n)
    await until('resumed delivery', () => receiver.acked('fail').length >= 1)
    expect(receiver.acked('fail').map((r) => r.body.data.value)).toEqual(['3'])

    // The failed event can be sent again by hand; it keeps its id.
    const failedId = history[0]?.event_id as string
    expect((await api('POST', `/webhooks/${wh.id}/deliveries/${failedId}/redeliver`)).status).toBe(200)
    await until('redelivery', () => receiver.acked('fail').length >= 2)
    expect(receiver.acked('fail')[1]?.body).toMatchObject({ id: failedId, data: { value: '1' } })
    expect(smtp.mails).toHaveLength(1)
  })

  it('cuts an attempt to a receiver that never answers at the timeout', async () => {
    receiver.mode('hang', 'hang')
    const wh = await create('hang', 'address_activity', { addresses: [H] })
    await sendEth(H, 1n)
    await until('two attempts', async () => (await deliveries(wh.id)).length >= 2)
    for (const d of (await deliveries(wh.id)).slice(0, 2)) {
      expect(d.status_code).toBeNull()
      expect(d.error).toMatch(/^timeout: no response within 3000 ms/)
      expect(d.duration_ms).toBeGreaterThanOrEqual(3000)
    }
    // A receiver that hangs holds up nothing else: another webhook is served meanwhile.
    const fast = await create('fast', 'address_activity', { addresses: [X] })
    await api('POST', `/webhooks/${fast.id}/test`)
    await until('the other webhook', () => receiver.acked('fast').length === 1)
    expect((await api('GET', `/webhooks/${wh.id}`)).body.status).toBe('active')
    expect((await deliveries(wh.id)).length).toBeLessThan(6)
    expect(await api('DELETE', `/webhooks/${wh.id}`)).toEqual({
      status: 200,
      body: { id: wh.id, deleted: true },
    })
    expect((await api('GET', `/webhooks/${wh.id}`)).status).toBe(404)
    expect((await api('DELETE', `/webhooks/${wh.id}`)).status).toBe(404)
  })

  it('never delivers an event whose block a reorg undid; delivers the replacing one', async () => {
    receiver.mode('reorg', 'hang')
    const wh = await create('reorg', 'address_activity', { addresses: [R] })
    await sendEth(R, 1n)
    // The first attempt is in flight (the receiver holds it) when the block is undone.
    await until('first attempt', () => receiver.received.some((r) => r.name === 'reorg'))
    const undone = JSON.parse(receiver.received.find((r) => r.name === 'reorg')?.raw ?? '{}').id as string
    await dev.rpc('anvil_reorg', [1, [[{ from: DEV_ACCOUNT, to: R, value: '0x2', gas: '0x5208' }, 0]]])
    const status = async () =>
      (
        await storage.db
          .selectFrom('webhook_events')
          .select('status')
          .where('id', '=', undone)
          .executeTakeFirst()
      )?.status
    await until('cancellation', async () => (await status()) === 'cancelled')
    receiver.mode('reorg', 'ok')
    await until('the replacing event', () => receiver.acked('reorg').some((r) => r.body.data.value === '2'))
    expect(receiver.acked('reorg').map((r) => r.body.id)).not.toContain(undone)
    expect(await status()).toBe('cancelled')
    expect(wh.status).toBe('active')
  })

  it('refuses hostile and invalid input with a 400 naming the problem', async () => {
    const base = { chain: 'ethereum-devnet', event_type: 'address_activity', config: { addresses: [A] } }
    const refused = async (body: unknown, pattern: RegExp) => {
      const res = await api('POST', '/webhooks', body)
      expect(res.status, JSON.stringify(res.body)).toBe(400)
      expect(res.body.error).toMatchObject({ code: 'invalid_request', status: 400 })
      expect(res.body.error?.message).toMatch(pattern)
    }
    await refused({ ...base, url: 'https://127.0.0.1/hook' }, /^url: .*127\.0\.0\.1 is a loopback address/)
    await refused({ ...base, url: 'https://169.254.169.254/latest/meta-data' }, /^url: .*link-local/)
    await refused({ ...base, url: 'https://[::1]:8443/' }, /^url: .*::1 is a loopback address/)
    await refused(
      { ...base, url: 'https://evil.test/hook' },
      /^url: host evil\.test resolves to 10\.0\.0\.1 is a private address/,
    )
    await refused(
      { ...base, url: `http://receiver.test:${receiver.port}/wh/aa` },
      /^url: must be an https:\/\/ URL/,
    )
    await refused({ ...base, url: 'https://[::ffff:10.0.0.1]/' }, /^url: .*private/)
    await refused({ ...base, url: 'not a url' }, /^url: not a valid absolute URL/)
    const many = Array.from({ length: 10_000 }, (_, i) => `0x${i.toString(16).padStart(40, '0')}`)
    await refused(
      { ...base, url: urlFor('aa'), config: { addresses: many } },
      /config\.addresses: at most 1000/,
    )
    await refused(
      { ...base, url: urlFor('aa'), event_type: 'pending_transaction' },
      /^event_type: must be one of/,
    )
    await refused(
      { ...base, url: urlFor('aa'), config: { addresses: [A, '0x123'] } },
      /config\.addresses\[1\]/,
    )
    await refused({ ...base, url: urlFor('aa'), config: { adresses: [A] } }, /adresses/)
    await refused(
      { ...base, url: urlFor('aa'), event_type: 'log', config: { topics: [null, '0x12'] } },
      /config\.topics\[1\]/,
    )
    await refused({ chain: 'ethereum-devnet', event_type: 'log' }, /^url: /)
    await refused(
      { ...base, url: urlFor('aa'), event_type: 'mined_transaction', config: {} },
      /config\.tx_hashes/,
    )
    expect((await api('POST', '/webhooks', { ...base, url: urlFor('aa'), chain: 'nochain' })).status).toBe(
      404,
    )

    const wh = await create('hostile', 'address_activity', { addresses: [A] })
    const patch = await api('PATCH', `/webhooks/${wh.id}`, { status: 'disabled' })
    expect(patch.status).toBe(400)
    expect(patch.body.error?.message).toMatch(/^status: cannot be set to disabled/)
    const badUrl = await api('PATCH', `/webhooks/${wh.id}`, { url: 'https://10.1.2.3/' })
    expect(badUrl.body.error?.message).toMatch(/^url: .*10\.1\.2\.3 is a private address/)
    expect((await api('PATCH', '/webhooks/wh_nope', { status: 'paused' })).body.error?.message).toMatch(
      /^id: /,
    )
    await api('DELETE', `/webhooks/${wh.id}`)
  })

  it('records a redirect as a failed attempt and never follows it', async () => {
    receiver.mode('redirect', 'redirect')
    receiver.location = `https://127.0.0.1:${receiver.port}/wh/target`
    const wh = await create('redirect', 'address_activity', { addresses: [B] })
    await api('POST', `/webhooks/${wh.id}/test`)
    await until('an attempt', async () => (await deliveries(wh.id)).length >= 1)
    const [first] = await deliveries(wh.id)
    expect(first?.status_code).toBe(302)
    expect(first?.error).toMatch(/^redirect: receiver answered 302 \(redirects are not followed\)/)
    expect(receiver.received.filter((r) => r.name === 'target')).toHaveLength(0)
    await api('DELETE', `/webhooks/${wh.id}`)
  })
})
