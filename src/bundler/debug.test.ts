import { Registry } from 'prom-client'
import { getAddress } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type BundlerFixture,
  NETWORK,
  startBundlerFixture,
} from '../../test/fixtures/bundler/bundler-fixture.ts'
import { ruleBreakers } from '../../test/fixtures/bundler/erc7562-fixture.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { createLogger } from '../logger.ts'
import type { Address, Hex } from '../types.ts'
import { ANVIL_EXECUTOR_KEYS } from './executor.ts'
import { toRpcUserOperation } from './schema.ts'
import { BundlerService } from './service.ts'

/**
 * Operator controls (the debug_bundler_* methods, as service methods), the executor balance
 * /ready reads, and the bundler's Prometheus series. Only the first backend: the SQL is the same.
 */

describe.each(storageBackends().slice(0, 1))('bundler operator controls ($name)', (backend) => {
  let fx: BundlerFixture
  let breakers: ReturnType<typeof ruleBreakers>

  beforeAll(async () => {
    fx = await startBundlerFixture(backend)
    breakers = ruleBreakers(fx)
  }, 120_000)
  afterAll(async () => {
    await fx?.close()
  })

  const v07 = () => fx.entryPoint('v07').address
  const op = async () => breakers.opOf(await breakers.account({}), 'v07')

  it('manual mode: the running builder bundles nothing until sendBundleNow, which returns the mined bundle', async () => {
    let rounds = 0
    const svc = fx.service({
      bundlingMode: 'manual',
      rpc: {
        call: (method, params) => {
          if (method === 'eth_getBlockByNumber' && params[0] === 'latest') rounds++
          return fx.rpc.call(method, params)
        },
      },
    })
    svc.start()
    const sent = await op()
    const hash = await svc.sendUserOperation(NETWORK, sent, v07())
    const seen = rounds
    // Builder rounds run (each reads the head) and leave the op alone.
    await until('three builder rounds', () => rounds >= seen + 3)
    expect(await svc.getUserOperationByHash(NETWORK, hash)).toMatchObject({ status: 'pending' })
    expect(await svc.debug.dumpMempool(NETWORK, v07())).toContainEqual(toRpcUserOperation(sent))

    const tx = await svc.debug.sendBundleNow(NETWORK)
    expect(tx).toMatch(/^0x[0-9a-f]{64}$/)
    // Settled before it returns: the receipt is there at once.
    expect(await svc.getUserOperationReceipt(NETWORK, hash)).toMatchObject({
      success: true,
      receipt: { transactionHash: tx },
    })
    expect(await svc.debug.sendBundleNow(NETWORK)).toBeNull()

    // Back to auto: the running loop bundles on its own.
    svc.debug.setBundlingMode(NETWORK, 'auto')
    const next = await svc.sendUserOperation(NETWORK, await op(), v07())
    await until('bundled by the loop', () => svc.getUserOperationReceipt(NETWORK, next))
    await svc.stop()
  }, 120_000)

  it('dumpMempool lists waiting ops; clearMempool drops them with a reason; clearState also forgets reputation', async () => {
    const svc = fx.service({ bundlingMode: 'manual' })
    const hash = await svc.sendUserOperation(NETWORK, await op(), v07())
    expect((await svc.debug.dumpMempool(NETWORK, v07())).length).toBeGreaterThan(0)
    expect(await svc.debug.dumpMempool(NETWORK, fx.entryPoint('v06').address)).toEqual([])
    await expect(
      svc.debug.dumpMempool(NETWORK, '0x0000000000000000000000000000000000000001'),
    ).rejects.toMatchObject({
      code: -32602,
    })
    expect(await svc.debug.clearMempool(NETWORK)).toBe('ok')
    expect(await svc.debug.dumpMempool(NETWORK, v07())).toEqual([])
    expect(await svc.getUserOperationByHash(NETWORK, hash)).toMatchObject({
      status: 'dropped',
      reason: 'cleared by the operator (debug_bundler_clearMempool)',
    })

    const address = '0x00000000000000000000000000000000000000bb' as Address
    await svc.debug.setReputation(NETWORK, [{ address, opsSeen: 7, opsIncluded: 3 }])
    expect(await svc.debug.dumpReputation(NETWORK)).toContainEqual({
      address,
      opsSeen: 7,
      opsIncluded: 3,
      status: 'ok',
    })
    await svc.sendUserOperation(NETWORK, await op(), v07())
    expect(await svc.debug.clearState(NETWORK)).toBe('ok')
    expect(await svc.debug.dumpReputation(NETWORK)).toEqual([])
    expect(await svc.debug.dumpMempool(NETWORK, v07())).toEqual([])
  }, 120_000)

  it('getStakeStatus reads the EntryPoint: the dev paymaster is staked, a fresh address is not', async () => {
    const svc = fx.service()
    const staked = await svc.debug.getStakeStatus(NETWORK, fx.aa.paymaster, v07())
    expect(staked.isStaked).toBe(true)
    // Checksummed, as the reference bundler answers: the v0.6 spec tests compare the string.
    expect(staked.stakeInfo.addr).toBe(getAddress(fx.aa.paymaster))
    expect(staked.stakeInfo.stake).toBeGreaterThan(0n)
    const nobody = await svc.debug.getStakeStatus(
      NETWORK,
      '0x00000000000000000000000000000000000000cc',
      v07(),
    )
    expect(nobody).toEqual({
      stakeInfo: {
        addr: getAddress('0x00000000000000000000000000000000000000cc'),
        stake: 0n,
        unstakeDelaySec: 0n,
      },
      isStaked: false,
    })
  }, 120_000)

  it('executor balances for /ready, and the Prometheus series', async () => {
    const registry = new Registry()
    const svc = new BundlerService({
      storage: fx.storage,
      networks: [fx.spec({ minExecutorBalance: 10n ** 30n })],
      logger: createLogger('silent'),
      registry,
    })
    const executor = privateKeyToAccount(ANVIL_EXECUTOR_KEYS[1] as Hex).address.toLowerCase()
    const [balance] = await svc.executorBalances()
    expect(balance).toMatchObject({ network: NETWORK, executor, ok: false })
    expect(balance?.wei).toBeGreaterThan(0n)
    // /ready asks one network at a time.
    expect(await svc.executorBalance(NETWORK)).toEqual(balance)
    await expect(svc.executorBalance('nowhere')).rejects.toMatchObject({ code: -32602 })
    const enough = fx.service({ minExecutorBalance: 1n })
    expect((await enough.executorBalances())[0]?.ok).toBe(true)

    const hash = await svc.sendUserOperation(NETWORK, await op(), v07())
    await expect(
      svc.sendUserOperation(NETWORK, { ...(await op()), signature: '0x' }, fx.entryPoint('v06').address),
    ).rejects.toMatchObject({
      code: -32602,
    })
    await svc.debug.sendBundleNow(NETWORK)
    expect(await svc.getUserOperationReceipt(NETWORK, hash)).toMatchObject({ success: true })
    const text = await registry.metrics()
    expect(text).toContain(`halyard_bundler_ops_received_total{network="${NETWORK}"} 2`)
    expect(text).toContain(`halyard_bundler_ops_accepted_total{network="${NETWORK}"} 1`)
    expect(text).toContain(`halyard_bundler_ops_rejected_total{network="${NETWORK}",code="-32602"} 1`)
    expect(text).toContain(`halyard_bundler_bundles_total{network="${NETWORK}",outcome="sent"} 1`)
    expect(text).toContain(`halyard_bundler_bundles_total{network="${NETWORK}",outcome="mined"} 1`)
    expect(text).toContain(`halyard_bundler_inclusion_seconds_count{network="${NETWORK}"} 1`)
    expect(text).toMatch(
      new RegExp(`halyard_bundler_executor_balance_wei\\{network="${NETWORK}",executor="${executor}"\\} \\d`),
    )
    expect(text).toMatch(new RegExp(`halyard_bundler_mempool_ops\\{network="${NETWORK}"\\} \\d+`))
  }, 120_000)
})
