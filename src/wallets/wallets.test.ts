import { toSimpleSmartAccount } from 'permissionless/accounts'
import { toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { expect, it } from 'vitest'
import { type Json, walletsFixture } from '../../test/fixtures/wallets/wallets-fixture.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { ENTRY_POINT_V07 } from '../aa/contracts.ts'

/** Creating and listing smart wallets; their deployment on chain is wallet-deployments.test.ts. */

const ZERO = `0x${'0'.repeat(40)}`
/** A checksummed address with the case of its first letter flipped: a wrong EIP-55 checksum. */
const badChecksum = (a: string) => {
  const i = a.slice(2).search(/[a-fA-F]/) + 2
  const c = a[i]!
  return a.slice(0, i) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + a.slice(i + 1)
}

describeEachStorage('smart wallets on $name', (backend) => {
  const fx = walletsFixture(backend)
  const { api, create, onChainAddress } = fx

  it('returns the factory CREATE2 address, equal to getAddress on chain and to permissionless.js', async () => {
    const { aa, client, keyA } = fx
    const owner = privateKeyToAccount(generatePrivateKey())
    for (const index of [0n, 42n, 2n ** 255n + 7n]) {
      const salt = index === 0n ? undefined : index === 42n ? '42' : toHex(index)
      const { status, body } = await create(keyA, { owner: owner.address, chain: 'ethereum-devnet', salt })
      expect(status).toBe(201)
      const expected = (await onChainAddress(owner.address, index)).toLowerCase()
      const independent = await toSimpleSmartAccount({
        client,
        owner,
        index,
        factoryAddress: aa.simpleAccountFactory.v07,
        entryPoint: { address: ENTRY_POINT_V07, version: '0.7' },
      })
      expect(body.address).toBe(expected)
      expect((await independent.getAddress()).toLowerCase()).toBe(expected)
      expect(body).toEqual({
        address: expected,
        owner: owner.address.toLowerCase(),
        chain: 'ethereum-devnet',
        status: 'counterfactual',
        factory: aa.simpleAccountFactory.v07,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      })
    }
  })

  it('returns the same wallet for the same (owner, salt, chain), whatever form the salt takes', async () => {
    const { keyA } = fx
    const owner = privateKeyToAccount(generatePrivateKey()).address
    const first = await create(keyA, { owner, chain: 'ethereum-devnet', salt: '255' })
    const again = await create(keyA, { owner: owner.toLowerCase(), chain: 'ethereum-devnet', salt: '0xff' })
    expect(first.status).toBe(201)
    expect(again.status).toBe(200)
    expect(again.body).toEqual(first.body)
    const list = await api(keyA, 'GET', '/wallets?limit=100')
    expect((list.body.wallets as Json[]).filter((w) => w.address === first.body.address)).toHaveLength(1)
  })

  it('answers 400 naming owner, salt or chain when they are bad', async () => {
    const { h, keyA } = fx
    const owner = privateKeyToAccount(generatePrivateKey()).address
    const cases: [unknown, RegExp][] = [
      [{ chain: 'ethereum-devnet' }, /owner/],
      [{ owner: '0x1234', chain: 'ethereum-devnet' }, /owner/],
      [{ owner }, /chain/],
      [{ owner: ZERO, chain: 'ethereum-devnet' }, /^owner must not be the zero address/],
      [{ owner: badChecksum(owner), chain: 'ethereum-devnet' }, /^owner has a wrong EIP-55 checksum/],
      [{ owner, chain: 'ethereum-devnet', salt: 'abc' }, /salt/],
      [{ owner, chain: 'ethereum-devnet', salt: '-1' }, /salt/],
      [{ owner, chain: 'ethereum-devnet', salt: (2n ** 256n).toString() }, /salt/],
      [{ owner, chain: 'ethereum-devnet', salt: true }, /salt/],
      [[owner], /JSON object/],
    ]
    for (const [body, message] of cases) {
      const res = await create(keyA, body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.body.error).toMatchObject({
        code: 'invalid_request',
        status: 400,
        message: expect.stringMatching(message),
      })
    }
    const noBody = await fetch(`${h.baseUrl}/wallets/create`, {
      method: 'POST',
      headers: { 'x-api-key': keyA },
    })
    expect(noBody.status).toBe(400)
    expect(((await noBody.json()) as { error: Json }).error.message).toMatch(/owner/)
    const malformed = await fetch(`${h.baseUrl}/wallets/create`, {
      method: 'POST',
      headers: { 'x-api-key': keyA, 'content-type': 'application/json' },
      body: '{"owner":',
    })
    expect(malformed.status).toBe(400)
    const noScope = await h.createKey({ scopes: ['rpc:read'] })
    expect((await create(noScope, { owner, chain: 'ethereum-devnet' })).status).toBe(403)
    expect((await api(keyA, 'GET', '/wallets/0xnothex')).status).toBe(400)
    expect((await api(keyA, 'GET', '/wallets?limit=101')).status).toBe(400)
    // An unknown chain is a 404 naming the parameter, as on every other route.
    const nowhere = await create(keyA, { owner, chain: 'nowhere-chain' })
    expect(nowhere.status).toBe(404)
    expect(nowhere.body.error).toMatchObject({
      code: 'not_found',
      message: expect.stringMatching(/^chain: /),
    })
    expect((await api(keyA, 'GET', '/wallets?chain=nowhere')).status).toBe(404)
    expect((await api(keyA, 'GET', `/wallets/${owner.toLowerCase()}?chain=nowhere`)).status).toBe(404)
    expect((await api(keyA, 'GET', `/wallets/${badChecksum(owner)}`)).body.error).toMatchObject({
      status: 400,
      message: expect.stringMatching(/^address has a wrong EIP-55 checksum/),
    })
  })

  it('lists wallets per calling key, with pagination and the chain filter', async () => {
    const { h } = fx
    const kA = await h.createKey({ scopes: ['wallets:manage'] })
    const kB = await h.createKey({ scopes: ['wallets:manage'] })
    const owner = privateKeyToAccount(generatePrivateKey()).address
    const made: string[] = []
    for (let i = 0; i < 5; i++) {
      const chain = i < 3 ? 'ethereum-devnet' : 'ethereum-testnet'
      made.push((await create(kA, { owner, chain, salt: String(i) })).body.address as string)
    }
    const all = await api(kA, 'GET', '/wallets')
    expect(all.body).toMatchObject({ page: 1, total: 5 })
    expect((all.body.wallets as Json[]).map((w) => w.address)).toEqual(made)
    expect(Object.keys((all.body.wallets as Json[])[0] as Json).sort()).toEqual(
      ['address', 'chain', 'created_at', 'owner', 'status'].sort(),
    )
    const p2 = await api(kA, 'GET', '/wallets?limit=2&page=2')
    expect(p2.body).toMatchObject({ page: 2, total: 5 })
    expect((p2.body.wallets as Json[]).map((w) => w.address)).toEqual(made.slice(2, 4))
    const past = await api(kA, 'GET', '/wallets?limit=2&page=9')
    expect(past.body).toEqual({ wallets: [], page: 9, total: 5 })
    const testnet = await api(kA, 'GET', '/wallets?chain=ethereum-testnet')
    expect(testnet.body.total).toBe(2)
    expect((testnet.body.wallets as Json[]).every((w) => w.chain === 'ethereum-testnet')).toBe(true)

    // Another key sees none of them, and cannot read them one by one either.
    expect((await api(kB, 'GET', '/wallets')).body).toEqual({ wallets: [], page: 1, total: 0 })
    expect((await api(kB, 'GET', `/wallets/${made[0]}`)).status).toBe(404)
    // Asking for the same wallet links it to that key too; the first key's list is unchanged.
    const shared = await create(kB, { owner, chain: 'ethereum-devnet', salt: '0' })
    expect(shared.status).toBe(201)
    expect(shared.body.address).toBe(made[0])
    expect((await api(kB, 'GET', '/wallets')).body.total).toBe(1)
    expect((await api(kA, 'GET', '/wallets')).body.total).toBe(5)
    // The same address on two networks: `chain` picks one.
    const onTestnet = await create(kA, { owner, chain: 'ethereum-testnet', salt: '0' })
    expect(onTestnet.body.address).toBe(made[0])
    expect((await api(kA, 'GET', `/wallets/${made[0]}?chain=ethereum-testnet`)).body.chain).toBe(
      'ethereum-testnet',
    )
    expect((await api(kA, 'GET', `/wallets/${made[0]}`)).body.chain).toBe('ethereum-devnet')
  })
})
