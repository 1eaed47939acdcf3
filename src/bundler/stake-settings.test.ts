import { describe, expect, it } from 'vitest'
import { bundlerConfigSchema } from './config.ts'
import { stakeSettings } from './register.ts'

describe('bundler stake settings (ERC-7562 MIN_STAKE_VALUE / MIN_UNSTAKE_DELAY)', () => {
  it('serve keeps the canonical 86400 s and 1 native unit; dev mode a 1 s delay', () => {
    expect(stakeSettings(undefined, false)).toEqual({ minStake: 10n ** 18n, minUnstakeDelaySec: 86_400n })
    expect(stakeSettings(undefined, true)).toEqual({ minStake: 10n ** 18n, minUnstakeDelaySec: 1n })
  })

  it('a network config sets both, in native units and seconds, in either mode', () => {
    const cfg = bundlerConfigSchema.parse({ minStake: '0.5', minUnstakeDelay: 2 })
    for (const dev of [false, true])
      expect(stakeSettings(cfg, dev)).toEqual({ minStake: 5n * 10n ** 17n, minUnstakeDelaySec: 2n })
  })

  it('refuses a stake that is not a decimal and a negative delay', () => {
    expect(bundlerConfigSchema.safeParse({ minStake: '1 ETH' }).success).toBe(false)
    expect(bundlerConfigSchema.safeParse({ minUnstakeDelay: -1 }).success).toBe(false)
  })
})
