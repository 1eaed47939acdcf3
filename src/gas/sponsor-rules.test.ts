import { encodeFunctionData, parseAbi, toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ACCOUNT,
  NETWORK,
  refusal,
  type SponsorFixture,
  startSponsorFixture,
} from '../../test/fixtures/gas/sponsor-fixture.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { NoPrices } from '../prices/sources.ts'
import type { Address, Hex } from '../types.ts'
import type { PolicyRules } from './policy-rules.ts'
import type { PolicyService } from './policy-service.ts'
import type { SponsorService } from './sponsor-service.ts'

/**
 * One test per rule: the op that breaks it is refused, naming the rule and the numbers; the op
 * that keeps it is signed. Ops are built by hand (the rules read only the op's fields).
 */

const accountAbi = parseAbi([
  'function execute(address dest, uint256 value, bytes func)',
  'function executeBatch(address[] dest, uint256[] value, bytes[] func)',
])
const erc20 = parseAbi([
  'function transfer(address to, uint256 amount)',
  'function approve(address spender, uint256 amount)',
  'function mint(address to, uint256 amount)',
])
const OTHER = '0x000000000000000000000000000000000000beef' as Address
const GWEI = 1_000_000_000n

const newSender = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
const execute = (to: Address, data: Hex = '0x') =>
  encodeFunctionData({ abi: accountAbi, functionName: 'execute', args: [to, 0n, data] })
const mint = (to: Address) => encodeFunctionData({ abi: erc20, functionName: 'mint', args: [to, 1n] })

/**
 * A v0.7 op of `sender`. With the paymaster's default 60,000 verification gas its maximum cost
 * is (200,000 + 150,000 + 60,000 + 50,000) gas × maxFeePerGas: 460,000 gwei at 1 gwei, $0.92
 * at $2000.
 */
function rawOp(sender: Address, callData: Hex, maxFeeGwei = 1n) {
  return {
    sender,
    nonce: '0x0',
    callData,
    callGasLimit: toHex(200_000),
    verificationGasLimit: toHex(150_000),
    preVerificationGas: toHex(50_000),
    maxFeePerGas: toHex(maxFeeGwei * GWEI),
    maxPriorityFeePerGas: toHex(GWEI),
  }
}

describe.each(storageBackends())('sponsorship rules on $name', (backend) => {
  let fx: SponsorFixture
  let svc: SponsorService
  let policies: PolicyService
  let token: Address

  beforeAll(async () => {
    fx = await startSponsorFixture(backend)
    svc = fx.sponsorService()
    policies = fx.policyService()
    token = fx.token
  }, 120_000)
  afterAll(async () => {
    await fx?.close()
  })

  const policy = async (rules: PolicyRules | Record<string, unknown>) =>
    (await policies.create(ACCOUNT, { name: 'rules', chain: NETWORK, rules })).id
  const sponsor = (policyId: string, op: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    svc.sponsor({ accountId: ACCOUNT }, { chain: NETWORK, policy_id: policyId, user_operation: op, ...extra })
  const at = (iso: string) => {
    fx.clock.ms = Date.parse(iso)
  }

  it('max_gas_usd: refuses an op whose maximum cost is above it, signs one below', async () => {
    fx.clock.ms = null
    const id = await policy({ max_gas_usd: '0.50' })
    const err = await refusal(sponsor(id, rawOp(newSender(), execute(token, mint(OTHER)))))
    expect(err.status).toBe(403)
    expect(err.rule).toBe('max_gas_usd')
    expect(err.message).toBe(
      'max_gas_usd: the operation may cost up to $0.92 (460000000000000 wei: all gas limits × maxFeePerGas); the policy allows $0.5 per operation',
    )
    const cheap = await sponsor(id, { ...rawOp(newSender(), execute(token)), maxFeePerGas: toHex(GWEI / 2n) })
    expect(cheap.sponsored_gas_usd).toBe('0.46')
  })

  it('max_per_user_per_day: counts per sender and UTC day; 429 with Retry-After until midnight', async () => {
    at('2031-05-01T23:59:00Z')
    const id = await policy({ max_per_user_per_day: 2 })
    const a = newSender()
    await sponsor(id, rawOp(a, execute(token)))
    await sponsor(id, rawOp(a, execute(token)))
    const err = await refusal(sponsor(id, rawOp(a, execute(token))))
    expect(err.status).toBe(429)
    expect(err.headers['retry-after']).toBe('60')
    expect(err.message).toBe(
      `max_per_user_per_day: sender ${a} has 2 sponsored operations on 2031-05-01 (UTC); the policy allows 2 per day`,
    )
    await sponsor(id, rawOp(newSender(), execute(token)))
    at('2031-05-02T00:00:01Z')
    await sponsor(id, rawOp(a, execute(token)))
  })

  it('allowed_contracts: every call target of execute/executeBatch must be listed; undecodable callData is refused', async () => {
    fx.clock.ms = null
    const id = await policy({ allowed_contracts: [token] })
    await sponsor(id, rawOp(newSender(), execute(token, mint(OTHER))))
    const err = await refusal(sponsor(id, rawOp(newSender(), execute(OTHER))))
    expect(err.message).toBe(
      `allowed_contracts: call 1 of 1 targets ${OTHER}, which the policy does not allow`,
    )
    const batch = encodeFunctionData({
      abi: accountAbi,
      functionName: 'executeBatch',
      args: [
        [token, OTHER],
        [0n, 0n],
        ['0x', '0x'],
      ],
    })
    expect((await refusal(sponsor(id, rawOp(newSender(), batch)))).message).toContain('call 2 of 2 targets')
    const odd = await refusal(sponsor(id, rawOp(newSender(), '0xdeadbeef00')))
    expect(odd.rule).toBe('allowed_contracts')
    expect(odd.message).toContain('is not a call this service can decode')
  })

  it('allowed_methods: selectors or signatures; a call with another method is refused', async () => {
    fx.clock.ms = null
    const id = await policy({ allowed_methods: ['transfer(address,uint256)', '0x40c10f19'] })
    await sponsor(id, rawOp(newSender(), execute(token, mint(OTHER))))
    const transfer = encodeFunctionData({ abi: erc20, functionName: 'transfer', args: [OTHER, 1n] })
    await sponsor(id, rawOp(newSender(), execute(token, transfer)))
    const approve = encodeFunctionData({ abi: erc20, functionName: 'approve', args: [OTHER, 1n] })
    const err = await refusal(sponsor(id, rawOp(newSender(), execute(token, approve))))
    expect(err.message).toBe(
      `allowed_methods: call 1 of 1 (to ${token}) uses method 0x095ea7b3, which the policy does not allow`,
    )
    expect((await refusal(sponsor(id, rawOp(newSender(), execute(token))))).message).toContain(
      'carries no data',
    )
  })

  it('rate_limit: at most `limit` signatures per window (aligned to Unix time) across the policy; 429 until it ends', async () => {
    at('2031-06-01T12:00:00Z')
    const id = await policy({ rate_limit: { limit: 2, window_seconds: 60 } })
    await sponsor(id, rawOp(newSender(), execute(token)))
    at('2031-06-01T12:00:20Z')
    await sponsor(id, rawOp(newSender(), execute(token)))
    const err = await refusal(sponsor(id, rawOp(newSender(), execute(token))))
    expect(err.status).toBe(429)
    expect(err.headers['retry-after']).toBe('40')
    expect(err.message).toBe(
      'rate_limit: the policy signed 2 operations in the current 60 s window (until 2031-06-01T12:01:00.000Z); it allows 2 per window',
    )
    at('2031-06-01T12:01:00Z')
    await sponsor(id, rawOp(newSender(), execute(token)))
    await sponsor(id, rawOp(newSender(), execute(token)))
    expect((await refusal(sponsor(id, rawOp(newSender(), execute(token))))).rule).toBe('rate_limit')
  })

  it('max_spend_usd: reserved maxima count against the policy total', async () => {
    fx.clock.ms = null
    const id = await policy({ max_spend_usd: '2' })
    await sponsor(id, rawOp(newSender(), execute(token)))
    await sponsor(id, rawOp(newSender(), execute(token)))
    const err = await refusal(sponsor(id, rawOp(newSender(), execute(token))))
    expect(err.message).toBe(
      'max_spend_usd: the policy has spent $1.84 (settled, plus the maximum of unsettled signatures) and this operation may cost up to $0.92; the policy allows $2 in total',
    )
    expect((await policies.get({ accountId: ACCOUNT }, id)).spend).toMatchObject({
      operations: 2,
      total_usd: '1.84',
    })
  })

  it('max_spend_per_sender_usd: per sender', async () => {
    fx.clock.ms = null
    const id = await policy({ max_spend_per_sender_usd: '1' })
    const a = newSender()
    await sponsor(id, rawOp(a, execute(token)))
    const err = await refusal(sponsor(id, rawOp(a, execute(token))))
    expect(err.message).toBe(
      `max_spend_per_sender_usd: sender ${a} has spent $0.92 and this operation may cost up to $0.92; the policy allows $1 per sender`,
    )
    await sponsor(id, rawOp(newSender(), execute(token)))
  })

  it('max_operations: a count across the policy', async () => {
    fx.clock.ms = null
    const id = await policy({ max_operations: 2 })
    await sponsor(id, rawOp(newSender(), execute(token)))
    await sponsor(id, rawOp(newSender(), execute(token)))
    const err = await refusal(sponsor(id, rawOp(newSender(), execute(token))))
    expect(err.message).toBe(
      'max_operations: the policy has sponsored 2 operations (reserved or settled); it allows 2',
    )
  })

  it('sender_allowlist and sender_blocklist', async () => {
    fx.clock.ms = null
    const [a, b] = [newSender(), newSender()]
    const allow = await policy({ sender_allowlist: [a] })
    await sponsor(allow, rawOp(a, execute(token)))
    expect((await refusal(sponsor(allow, rawOp(b, execute(token))))).message).toBe(
      `sender_allowlist: sender ${b} is not in the policy's allowlist`,
    )
    const block = await policy({ sender_blocklist: [b] })
    await sponsor(block, rawOp(a, execute(token)))
    expect((await refusal(sponsor(block, rawOp(b, execute(token))))).message).toBe(
      `sender_blocklist: sender ${b} is blocked by this policy`,
    )
  })

  it('start_time and end_time; the signature never outlives end_time', async () => {
    const id = await policy({ start_time: '2031-07-01T00:00:00Z', end_time: '2031-07-01T00:05:00Z' })
    at('2031-06-30T23:59:59Z')
    expect((await refusal(sponsor(id, rawOp(newSender(), execute(token))))).message).toBe(
      'start_time: the policy sponsors from 2031-07-01T00:00:00.000Z; it is 2031-06-30T23:59:59.000Z',
    )
    at('2031-07-01T00:02:00Z')
    const ok = await sponsor(id, rawOp(newSender(), execute(token)))
    expect(ok.validUntil).toBe(Date.parse('2031-07-01T00:05:00Z') / 1000)
    at('2031-07-01T00:05:00Z')
    expect((await refusal(sponsor(id, rawOp(newSender(), execute(token))))).rule).toBe('end_time')
  })

  it('sponsorship_expiry_seconds sets validUntil (default 600 s)', async () => {
    at('2031-08-01T00:00:00Z')
    const now = Date.parse('2031-08-01T00:00:00Z') / 1000
    const short = await sponsor(
      await policy({ sponsorship_expiry_seconds: 120 }),
      rawOp(newSender(), execute(token)),
    )
    expect(short.validUntil).toBe(now + 120)
    expect((await sponsor(await policy({}), rawOp(newSender(), execute(token)))).validUntil).toBe(now + 600)
  })

  it('without a native price, USD rules refuse saying so; other policies still sign (sponsored_gas_usd null)', async () => {
    fx.clock.ms = null
    const noPrice = fx.sponsorService({ spec: { prices: new NoPrices() } })
    const usd = await policy({ max_spend_usd: '10' })
    const err = await refusal(
      noPrice.sponsor(
        { accountId: ACCOUNT },
        {
          chain: NETWORK,
          policy_id: usd,
          user_operation: rawOp(newSender(), execute(token)),
        },
      ),
    )
    expect(err.message).toBe(
      "max_spend_usd: no USD price is known for ethereum-devnet's native currency, so this rule cannot be checked and the operation is not sponsored",
    )
    const free = await policy({ max_operations: 10 })
    const r = await noPrice.sponsor(
      { accountId: ACCOUNT },
      {
        chain: NETWORK,
        policy_id: free,
        user_operation: rawOp(newSender(), execute(token)),
      },
    )
    expect(r.sponsored_gas_usd).toBeNull()
  })

  it('a paused policy, another account’s policy, another chain and a deposit that cannot cover the op are refused', async () => {
    fx.clock.ms = null
    const id = await policy({})
    await policies.update({ accountId: ACCOUNT }, id, { status: 'paused' })
    const paused = await refusal(sponsor(id, rawOp(newSender(), execute(token))))
    expect(paused.message).toBe(`status: policy ${id} is paused; PATCH its status to active to sponsor again`)
    await policies.update({ accountId: ACCOUNT }, id, { status: 'active' })
    await sponsor(id, rawOp(newSender(), execute(token)))
    const theirs = await refusal(
      svc.sponsor(
        { accountId: 'acct_else' },
        { chain: NETWORK, policy_id: id, user_operation: rawOp(newSender(), '0x') },
      ),
    )
    expect(theirs.status).toBe(404)
    expect((await refusal(sponsor(`gp_${'0'.repeat(24)}`, rawOp(newSender(), '0x')))).status).toBe(404)
    // Not an id `create` mints: refused before the lookup, as GET /gas/policies/:id does.
    expect((await refusal(sponsor('gp_missing', rawOp(newSender(), '0x')))).status).toBe(400)
    const chain = await refusal(
      svc.sponsor(
        { accountId: ACCOUNT },
        { chain: 'polygon', policy_id: id, user_operation: rawOp(newSender(), '0x') },
      ),
    )
    expect(chain.message).toBe('chain: gas sponsorship is not configured for polygon')
    // 10 ETH deposited: 20M gas at 1,000 gwei may cost 20 ETH.
    const huge = {
      ...rawOp(newSender(), '0x'),
      callGasLimit: toHex(20_000_000),
      maxFeePerGas: toHex(1000n * GWEI),
    }
    const deposit = await refusal(sponsor(id, huge))
    expect(deposit.message).toMatch(
      /^paymaster_deposit: paymaster 0x[0-9a-f]{40} has \d+ wei deposited at EntryPoint/,
    )
  })

  it('bad requests name the field', async () => {
    const id = await policy({})
    expect(
      (await refusal(svc.sponsor({ accountId: ACCOUNT }, { chain: NETWORK, policy_id: id }))).message,
    ).toContain('user_operation: is required')
    const noGas = { ...rawOp(newSender(), '0x'), callGasLimit: undefined }
    expect((await refusal(sponsor(id, noGas))).message).toBe('user_operation.callGasLimit is required')
    expect((await refusal(sponsor(id, { ...rawOp(newSender(), '0x'), sender: '0x12' }))).message).toContain(
      'user_operation.sender',
    )
    expect((await refusal(sponsor(id, rawOp(newSender(), '0x'), { entryPoint: OTHER }))).message).toContain(
      `entryPoint: ${OTHER} is not an EntryPoint sponsored on ethereum-devnet`,
    )
    expect((await refusal(sponsor(id, rawOp(newSender(), '0x'), { extra: 1 }))).message).toContain(
      'Unrecognized key',
    )
  })
})
