import { expect, it } from 'vitest'
import { webhooksFixture } from '../../test/fixtures/webhooks/webhooks-fixture.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import type { Address } from '../types.ts'

/**
 * Several event types on one webhook: `event_types` at create and PATCH, `event_type` as
 * before; the matcher sends an event of each listed type, with its own type, and nothing of the others.
 */
const O = '0x00000000000000000000000000000000000000e1' as Address

describeEachStorage('webhooks: several event types per webhook on $name', (backend) => {
  const fx = webhooksFixture(backend)
  const { api } = fx

  it('monitors every listed type, shows them on read, and changes them with PATCH', async () => {
    const { dev, receiver, usd, nft } = fx
    const res = await api('POST', '/webhooks', {
      url: fx.urlFor('types'),
      chain: 'ethereum-devnet',
      event_types: ['token_transfer', 'nft_transfer'],
      config: { addresses: [O], address_match: 'to' },
    })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body).toMatchObject({
      event_type: 'token_transfer',
      event_types: ['token_transfer', 'nft_transfer'],
    })
    const id = res.body.id as string
    expect((await api('GET', `/webhooks/${id}`)).body).toMatchObject({
      event_type: 'token_transfer',
      event_types: ['token_transfer', 'nft_transfer'],
      config: { addresses: [O], address_match: 'to' },
    })
    const listed = (await api('GET', '/webhooks')).body.webhooks as Array<Record<string, unknown>>
    expect(listed.find((w) => w.id === id)).toMatchObject({ event_types: ['token_transfer', 'nft_transfer'] })

    await dev.send('DemoERC20', usd, 'mint', [O, 5n])
    await dev.send('DemoERC721', nft, 'mint', [O, 501n, 'data:,x'])
    await until('both events', () => receiver.acked('types').length >= 2)
    expect(receiver.acked('types').map((r) => r.body.event_type)).toEqual(['token_transfer', 'nft_transfer'])

    // Down to one type: the NFT transfer after it is not sent, the token transfer is.
    const patched = await api('PATCH', `/webhooks/${id}`, { event_types: ['token_transfer'] })
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    expect(patched.body).toMatchObject({ event_type: 'token_transfer', event_types: ['token_transfer'] })
    await dev.send('DemoERC721', nft, 'mint', [O, 502n, 'data:,y'])
    await dev.send('DemoERC20', usd, 'mint', [O, 6n])
    await until('the token transfer', () => receiver.acked('types').length >= 3)
    await fx.synced()
    const after = receiver.acked('types').slice(2)
    expect(after.map((r) => r.body.event_type)).toEqual(['token_transfer'])
    expect(after[0]?.body.data).toMatchObject({ value: '6' })

    // `event_type` alone in a PATCH changes the type too; new_block reads no filter, so the
    // stored addresses must go with it.
    const noFilter = await api('PATCH', `/webhooks/${id}`, { event_type: 'new_block' })
    expect(noFilter.status).toBe(400)
    expect(noFilter.body.error?.message).toMatch(/addresses/)
    const toBlocks = await api('PATCH', `/webhooks/${id}`, { event_type: 'new_block', config: {} })
    expect(toBlocks.body).toMatchObject({ event_type: 'new_block', event_types: ['new_block'] })
  })

  it('documents event_types and every filter key, with a description, in the OpenAPI document', async () => {
    type Schema = { $ref?: string; properties?: Record<string, Schema>; description?: string }
    const doc = (await (await fetch(`${fx.h.baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: Schema }> } }>>
      components?: { schemas?: Record<string, Schema> }
    }
    const body = (path: string, method: string) => {
      const s = doc.paths[path]?.[method]?.requestBody.content['application/json']?.schema as Schema
      return s.$ref ? (doc.components?.schemas?.[s.$ref.split('/').pop() as string] as Schema) : s
    }
    for (const [path, method] of [
      ['/v1/webhooks', 'post'],
      ['/v1/webhooks/{id}', 'patch'],
    ] as const) {
      const props = body(path, method).properties ?? {}
      expect(props.event_types?.description).toMatch(/several event types/)
      const filters = props.config?.properties ?? {}
      const keys = ['addresses', 'address_match', 'contracts', 'min_value', 'min_value_per_contract']
      keys.push('selectors', 'tx_hashes', 'topics')
      for (const key of keys)
        expect(filters[key]?.description, `${method} config.${key}`).toEqual(expect.any(String))
    }
  })

  it('refuses both fields at once, unknown or empty lists, and filters no listed type reads', async () => {
    const base = { url: fx.urlFor('types-bad'), chain: 'ethereum-devnet' }
    const refused = async (body: Record<string, unknown>, pattern: RegExp) => {
      const res = await api('POST', '/webhooks', { ...base, ...body })
      expect(res.status, JSON.stringify(res.body)).toBe(400)
      expect(res.body.error?.message).toMatch(pattern)
    }
    await refused(
      { event_type: 'token_transfer', event_types: ['nft_transfer'], config: {} },
      /event_type or event_types, not both/,
    )
    await refused({ event_types: [], config: {} }, /at least one/)
    await refused({ event_types: ['token_transfer', 'nope'], config: {} }, /event_types.*nope/)
    await refused({ event_types: 'token_transfer', config: {} }, /event_types/)
    await refused({ config: {} }, /event_type/)
    // `tx_hashes` is mined_transaction's, not a token or NFT filter.
    await refused(
      { event_types: ['token_transfer', 'nft_transfer'], config: { tx_hashes: [`0x${'1'.repeat(64)}`] } },
      /tx_hashes/,
    )
    // Each listed type keeps its own rules: address_activity needs addresses.
    await refused({ event_types: ['new_block', 'address_activity'], config: {} }, /addresses/)
    const ok = await api('POST', '/webhooks', {
      ...base,
      event_types: ['new_block', 'address_activity', 'new_block'],
      config: { addresses: [O] },
    })
    expect(ok.status, JSON.stringify(ok.body)).toBe(201)
    // Listed twice, kept once.
    expect(ok.body.event_types).toEqual(['new_block', 'address_activity'])
    const patch = await api('PATCH', `/webhooks/${ok.body.id}`, {
      event_type: 'new_block',
      event_types: ['new_block'],
    })
    expect(patch.status).toBe(400)
    expect(patch.body.error?.message).toMatch(/not both/)
    await api('DELETE', `/webhooks/${ok.body.id}`)
  })
})
