import { createHmac } from 'node:crypto'
import { pad, toHex } from 'viem'
import { expect, it } from 'vitest'
import { A, B, webhooksFixture, X } from '../../test/fixtures/webhooks/webhooks-fixture.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { DEV_ACCOUNT } from '../devnet/demo.ts'
import { TRANSFER_TOPIC, ZERO_ADDRESS } from '../indexer/decode.ts'
import type { Hash } from '../types.ts'
import { verifyWebhook } from './verify.ts'

/**
 * Webhooks end to end on real parts (see test/fixtures/webhooks/webhooks-fixture.ts): every event type delivered once
 * and signed, the read/list API, test events, and the refusal of hostile input.
 * The failure paths (retries, timeouts, reorgs, redirects) are in webhooks.failures.test.ts.
 */
describeEachStorage('webhooks: delivery and API on $name', (backend) => {
  const fx = webhooksFixture(backend)
  const { api, create, deliveries, synced, urlFor } = fx

  it('delivers each event type once, signed, with the envelope and data of form A', async () => {
    const { dev, receiver, usd, nft, items } = fx
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
        expect(verifyWebhook(r.raw, r.headers, secrets[name] as string)).toEqual({ ok: true, form: 'A' })
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
    const { h } = fx
    const list = await api('GET', '/webhooks?limit=2')
    expect(list.status).toBe(200)
    expect(list.body).toMatchObject({ page: 1, total: 5 })
    const items = list.body.webhooks as Array<Record<string, unknown>>
    expect(items).toHaveLength(2)
    expect(Object.keys(items[0] as object).sort()).toEqual([
      'chain',
      'created_at',
      'event_type',
      'event_types',
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
    const { receiver } = fx
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
    expect(verifyWebhook(got?.raw ?? '', got?.headers ?? {}, wh.signing_secret)).toEqual({
      ok: true,
      form: 'A',
    })
  })

  it('refuses hostile and invalid input with a 400 naming the problem', async () => {
    const { receiver } = fx
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
      /^url: host evil\.test does not resolve to a public address; private and internal targets are refused$/,
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
      { ...base, url: urlFor('aa'), event_type: 'dropped_transaction' },
      /^event_type: must be one of/,
    )
    await refused(
      { ...base, url: urlFor('aa'), config: { addresses: [A, '0x123'] } },
      /config\.addresses\[1\]/,
    )
    await refused({ ...base, url: urlFor('aa'), config: { adresses: [A] } }, /adresses/)
    // A mixed-case address is an EIP-55 checksum: a mistyped one is refused, not watched.
    await refused(
      { ...base, url: urlFor('aa'), config: { addresses: ['0xF39Fd6e51aad88F6F4ce6aB8827279cffFb92266'] } },
      /config\.addresses\[0\]: has a wrong EIP-55 checksum/,
    )
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
})
