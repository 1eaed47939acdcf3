import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { refusal } from '../../test/fixtures/gas/sponsor-fixture.ts'
import { storageBackends, type TestStorage } from '../../test/helpers/storage.ts'
import { PolicyService } from './policy-service.ts'
import { PolicyStore } from './policy-store.ts'

const CHAIN = 'ethereum-devnet'
const TOKEN = '0x5FbDB2315678afecb367f032d93F642f64180aa3'

describe.each(storageBackends())('gas policies on $name', (backend) => {
  let storage: TestStorage
  let svc: PolicyService

  beforeAll(async () => {
    storage = await backend.open()
    svc = new PolicyService(new PolicyStore(storage.db), (c) => c === CHAIN)
  })
  afterAll(async () => {
    await storage?.close()
  })

  it('creates a policy in its documented shape: gp_ id, active, rules normalised', async () => {
    const p = await svc.create('acct_a', {
      name: 'Onboarding',
      chain: CHAIN,
      rules: {
        max_gas_usd: '0.50',
        max_per_user_per_day: 3,
        allowed_contracts: [TOKEN],
        allowed_methods: ['transfer(address,uint256)', '0x40C10F19'],
        rate_limit: { limit: 10, window_seconds: 60 },
        start_time: 1_900_000_000,
      },
    })
    expect(p.id).toMatch(/^gp_[0-9a-f]{24}$/)
    expect(p).toMatchObject({ name: 'Onboarding', chain: CHAIN, status: 'active' })
    expect(p.rules).toEqual({
      max_gas_usd: '0.5',
      max_per_user_per_day: 3,
      allowed_contracts: [TOKEN.toLowerCase()],
      allowed_methods: ['transfer(address,uint256)', '0x40C10F19'],
      rate_limit: { limit: 10, window_seconds: 60 },
      start_time: '2030-03-17T17:46:40.000Z',
    })
    expect(Date.parse(p.created_at)).not.toBeNaN()
    expect(p.spend).toEqual({
      operations: 0,
      settled_operations: 0,
      total_usd: '0',
      reserved_usd: '0',
      settled_usd: '0',
      reserved_wei: '0',
      settled_wei: '0',
    })
    expect(await svc.get({ accountId: 'acct_a' }, p.id)).toEqual(p)
  })

  it.each([
    [{ bogus: 1 }, 'rules: Unrecognized key: "bogus"'],
    [{ max_gas_usd: 0.5 }, 'rules.max_gas_usd: must be a decimal string'],
    [{ max_gas_usd: '-1' }, 'rules.max_gas_usd: must be a decimal string'],
    [{ max_gas_usd: '0' }, 'rules.max_gas_usd: must be greater than 0'],
    [{ max_per_user_per_day: 0 }, 'rules.max_per_user_per_day: must be at least 1'],
    [{ max_per_user_per_day: 1.5 }, 'rules.max_per_user_per_day: must be an integer'],
    [
      { allowed_contracts: ['0x1234'] },
      'rules.allowed_contracts[0]: must be a 0x-prefixed 20-byte hex address',
    ],
    [{ allowed_contracts: [] }, 'rules.allowed_contracts: must list at least one address'],
    [{ allowed_methods: ['transfer'] }, 'rules.allowed_methods[0]: must be a 4-byte selector'],
    [{ allowed_methods: ['transfer(adress)'] }, 'rules.allowed_methods[0]: must be a 4-byte selector'],
    [{ rate_limit: { limit: 5 } }, 'rules.rate_limit.window_seconds: must be an integer'],
    [
      { rate_limit: { limit: 5, window_seconds: 60, burst: 2 } },
      'rules.rate_limit: Unrecognized key: "burst"',
    ],
    [{ rate_limit: 5 }, 'rules.rate_limit: must be an object'],
    [{ start_time: 'tomorrow' }, 'rules.start_time: must be an ISO 8601 timestamp or Unix seconds'],
    [{ start_time: 2_000_000_000, end_time: 1_900_000_000 }, 'rules.end_time: must be later than start_time'],
    [{ sponsorship_expiry_seconds: 5 }, 'rules.sponsorship_expiry_seconds: must be at least 30'],
    [
      { sender_allowlist: [TOKEN], sender_blocklist: [TOKEN.toLowerCase()] },
      'rules.sender_blocklist: lists 0x5fbdb2315678afecb367f032d93f642f64180aa3, which sender_allowlist allows',
    ],
  ])('refuses rules %j with a 400 naming the key', async (rules, message) => {
    const err = await refusal(svc.create('acct_a', { name: 'bad', chain: CHAIN, rules }))
    expect(err.status).toBe(400)
    expect(err.message).toContain(message)
  })

  it('refuses a missing name, chain or rules, and a chain without sponsorship', async () => {
    expect((await refusal(svc.create('acct_a', { chain: CHAIN, rules: {} }))).message).toContain('name: ')
    expect((await refusal(svc.create('acct_a', { name: 'x', rules: {} }))).message).toContain('chain: ')
    expect((await refusal(svc.create('acct_a', { name: 'x', chain: CHAIN }))).message).toContain('rules: ')
    const other = await refusal(svc.create('acct_a', { name: 'x', chain: 'polygon', rules: {} }))
    expect(other.message).toBe('chain: gas sponsorship is not configured for polygon')
    expect((await refusal(svc.create('acct_a', 'nope'))).message).toBe('body must be a JSON object')
  })

  it('lists the account’s policies only, paginated (default 25, at most 100)', async () => {
    const mine: string[] = []
    for (let i = 0; i < 27; i++)
      mine.push((await svc.create('acct_list', { name: `p${i}`, chain: CHAIN, rules: {} })).id)
    await svc.create('acct_other', { name: 'theirs', chain: CHAIN, rules: {} })
    const first = await svc.list({ accountId: 'acct_list' })
    expect(first).toMatchObject({ page: 1, limit: 25, total: 27 })
    expect(first.policies.map((p) => p.id)).toEqual(mine.slice(0, 25))
    const second = await svc.list({ accountId: 'acct_list' }, { page: '2' })
    expect(second.policies.map((p) => p.id)).toEqual(mine.slice(25))
    expect((await refusal(svc.list({ accountId: 'acct_list' }, { limit: '101' }))).message).toContain('limit')
  })

  it('updates name, rules and status; refuses other statuses and empty patches', async () => {
    const p = await svc.create('acct_u', { name: 'before', chain: CHAIN, rules: { max_operations: 5 } })
    const u = await svc.update({ accountId: 'acct_u' }, p.id, {
      name: 'after',
      status: 'paused',
      rules: { max_operations: 9 },
    })
    expect(u).toMatchObject({ name: 'after', status: 'paused', rules: { max_operations: 9 } })
    expect(Date.parse(u.updated_at)).toBeGreaterThanOrEqual(Date.parse(p.updated_at))
    expect((await svc.update({ accountId: 'acct_u' }, p.id, { status: 'active' })).status).toBe('active')
    expect(
      (await refusal(svc.update({ accountId: 'acct_u' }, p.id, { status: 'disabled' }))).message,
    ).toContain('status: must be active or paused')
    expect((await refusal(svc.update({ accountId: 'acct_u' }, p.id, {}))).message).toContain(
      'send at least one of',
    )
    expect(
      (await refusal(svc.update({ accountId: 'acct_u' }, p.id, { rules: { max_operations: -1 } }))).message,
    ).toContain('rules.max_operations')
    expect((await refusal(svc.update({ accountId: 'acct_other' }, p.id, { name: 'x' }))).status).toBe(404)
  })

  it('deletes; another account cannot see, change or delete it', async () => {
    const p = await svc.create('acct_d', { name: 'gone', chain: CHAIN, rules: {} })
    expect((await refusal(svc.get({ accountId: 'acct_x' }, p.id))).status).toBe(404)
    expect((await refusal(svc.delete({ accountId: 'acct_x' }, p.id))).status).toBe(404)
    await svc.delete({ accountId: 'acct_d' }, p.id)
    expect((await refusal(svc.get({ accountId: 'acct_d' }, p.id))).status).toBe(404)
    expect((await refusal(svc.delete({ accountId: 'acct_d' }, p.id))).message).toBe(
      `policy ${p.id} not found`,
    )
  })
})
