import { pad, toFunctionSelector } from 'viem'
import { expect, it } from 'vitest'
import { webhooksFixture } from '../../test/fixtures/webhooks/webhooks-fixture.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { DEV_ACCOUNT } from '../devnet/demo.ts'
import { TRANSFER_TOPIC } from '../indexer/decode.ts'
import type { Address } from '../types.ts'

/**
 * Filters (address from/to/either, token contract, minimum value raw and per
 * token, function selector, topic hash) on real parts (test/fixtures/webhooks/webhooks-fixture.ts). Filters run in
 * the matcher inside the indexer's transaction, so once the indexer has the block, every event
 * a filter let through is a row and nothing else is: the tests read the rows after `synced()`.
 */
const P = '0x00000000000000000000000000000000000000c1' as Address
const Q = '0x00000000000000000000000000000000000000c2' as Address

describeEachStorage('webhooks: filters and the webhook cap on $name', (backend) => {
  const fx = webhooksFixture(backend)
  const { api, create, sendEth, synced } = fx

  /** The `data` of every event row of a webhook, in order. */
  const eventsOf = async (id: string) =>
    (
      await fx.storage.db
        .selectFrom('webhook_events')
        .select('body')
        .where('webhook_id', '=', id)
        .where('event_type', '<>', 'test')
        .orderBy('seq')
        .execute()
    ).map((r) => (JSON.parse(r.body) as { data: Record<string, unknown> }).data)

  it('address: from, to or either side', async () => {
    const { dev, usd } = fx
    const to = await create('side-to', 'address_activity', { addresses: [P], address_match: 'to' })
    const from = await create('side-from', 'address_activity', { addresses: [P], address_match: 'from' })
    const either = await create('side-either', 'address_activity', { addresses: [P] })
    const outgoing = await create('side-dev', 'address_activity', {
      addresses: [DEV_ACCOUNT],
      address_match: 'from',
    })
    const tokTo = await create('tok-to', 'token_transfer', { addresses: [P], address_match: 'to' })
    const tokFrom = await create('tok-from', 'token_transfer', { addresses: [P], address_match: 'from' })
    await sendEth(P, 5n)
    await dev.send('DemoERC20', usd, 'mint', [P, 9n])
    await synced()
    expect((await eventsOf(to.id)).map((d) => [d.direction, d.value])).toEqual([
      ['incoming', '5'],
      ['incoming', '9'],
    ])
    expect(await eventsOf(from.id)).toEqual([])
    expect(await eventsOf(either.id)).toHaveLength(2)
    // DEV sent both transactions: only its outgoing side, never the incoming side of anything.
    expect((await eventsOf(outgoing.id)).map((d) => d.direction)).toEqual(['outgoing', 'outgoing'])
    expect((await eventsOf(tokTo.id)).map((d) => d.value)).toEqual(['9'])
    expect(await eventsOf(tokFrom.id)).toEqual([])
  })

  it('token contract', async () => {
    const { dev, usd } = fx
    const other = await dev.deploy('DemoERC20', ['Other', 'OTH', 18])
    const wh = await create('contract', 'token_transfer', { contracts: [usd] })
    await dev.send('DemoERC20', other, 'mint', [Q, 1n])
    await dev.send('DemoERC20', usd, 'mint', [Q, 2n])
    await synced()
    expect((await eventsOf(wh.id)).map((d) => [d.contract, d.value])).toEqual([[usd, '2']])
  })

  it('minimum value: raw, per token contract, and native value', async () => {
    const { dev, usd } = fx
    const other = await dev.deploy('DemoERC20', ['Other', 'OTH', 18])
    const raw = await create('min', 'token_transfer', { contracts: [usd], min_value: '1000' })
    const perToken = await create('min-per', 'token_transfer', {
      addresses: [Q],
      min_value: '10000',
      min_value_per_contract: { [usd.toUpperCase().replace('0X', '0x')]: '500' },
    })
    const native = await create('min-native', 'address_activity', { addresses: [Q], min_value: '10' })
    await dev.send('DemoERC20', usd, 'mint', [Q, 999n])
    await dev.send('DemoERC20', usd, 'mint', [Q, 1000n])
    await dev.send('DemoERC20', other, 'mint', [Q, 600n])
    await dev.send('DemoERC20', other, 'mint', [Q, 10_000n])
    await sendEth(Q, 9n)
    await sendEth(Q, 10n)
    await synced()
    expect((await eventsOf(raw.id)).map((d) => d.value)).toEqual(['1000'])
    expect((await eventsOf(perToken.id)).map((d) => [d.contract, d.value])).toEqual([
      [usd, '999'],
      [usd, '1000'],
      [other, '10000'],
    ])
    // The minimum applies to native value and to token amounts alike.
    expect((await eventsOf(native.id)).map((d) => [d.asset, d.value])).toEqual([
      ['DUSD', '999'],
      ['DUSD', '1000'],
      ['OTH', '600'],
      ['OTH', '10000'],
      ['ETH', '10'],
    ])
  })

  it('function selector', async () => {
    const { dev, usd } = fx
    const mint = toFunctionSelector('mint(address,uint256)')
    const wh = await create('selector', 'address_activity', {
      addresses: [DEV_ACCOUNT],
      address_match: 'from',
      selectors: [mint.toUpperCase().replace('0X', '0x')],
    })
    await dev.send('DemoERC20', usd, 'mint', [DEV_ACCOUNT, 50n])
    await dev.send('DemoERC20', usd, 'transfer', [P, 20n])
    await sendEth(P, 1n)
    await synced()
    // Only the mint call: not the transfer call, not the plain value transfer (no selector).
    const got = await eventsOf(wh.id)
    expect(got).toHaveLength(1)
    expect(got[0]).toMatchObject({ to: usd, direction: 'outgoing', asset: 'ETH' })
  })

  it('topic hash', async () => {
    const { dev, usd } = fx
    const wh = await create('topic', 'log', { addresses: [usd], topics: [TRANSFER_TOPIC, null, pad(P)] })
    await dev.send('DemoERC20', usd, 'mint', [Q, 3n])
    await dev.send('DemoERC20', usd, 'mint', [P, 4n])
    await synced()
    const got = await eventsOf(wh.id)
    expect(got).toHaveLength(1)
    expect((got[0]?.topics as string[] | undefined)?.[2]).toBe(pad(P))
  })

  it('refuses a malformed filter with a 400 naming the field', async () => {
    const refused = async (event_type: string, config: unknown, pattern: RegExp) => {
      const res = await api('POST', '/webhooks', {
        url: fx.urlFor('bad'),
        chain: 'ethereum-devnet',
        event_type,
        config,
      })
      expect(res.status).toBe(400)
      expect(res.body.error?.code).toBe('invalid_request')
      expect(res.body.error?.message).toMatch(pattern)
    }
    await refused('address_activity', { addresses: [P], address_match: 'sideways' }, /address_match/)
    await refused('address_activity', { addresses: [P], selectors: ['0x1234'] }, /selectors/)
    await refused('token_transfer', { min_value_per_contract: { nope: '1' } }, /min_value_per_contract/)
    await refused('token_transfer', { min_value_per_contract: { [P]: '-1' } }, /min_value_per_contract/)
    await refused('nft_transfer', { selectors: ['0x12345678'] }, /selectors/)
  })

  it('caps the number of webhooks per account by plan (configured: free=3), with a 400 naming the limit', async () => {
    const free = await fx.h.createKey({ plan: 'free', email: 'capped@test.local' })
    const body = (i: number) => ({
      url: fx.urlFor(`cap-${i}`),
      chain: 'ethereum-devnet',
      event_type: 'log',
      config: {},
    })
    for (let i = 0; i < 3; i++) expect((await api('POST', '/webhooks', body(i), free)).status).toBe(201)
    const refused = await api('POST', '/webhooks', body(3), free)
    expect(refused.status).toBe(400)
    expect(refused.body.error).toEqual({
      code: 'invalid_request',
      status: 400,
      message:
        'webhooks: limit reached: the free plan allows 3 webhooks per account; delete one or move to a larger plan',
    })
    // Deleting one makes room again.
    const first = (await api('GET', '/webhooks?limit=1', undefined, free)).body.webhooks as Array<{
      id: string
    }>
    expect((await api('DELETE', `/webhooks/${first[0]?.id}`, undefined, free)).status).toBe(200)
    expect((await api('POST', '/webhooks', body(3), free)).status).toBe(201)
  })
})
