import { describe, expect, it } from 'vitest'
import { BundlerError, BundlerErrorCode } from '../bundler/types.ts'
import { UpstreamUnavailableError } from '../chains/upstream-unavailable.ts'
import { HalyardError, invalidRequest, notFound } from '../errors.ts'
import { SponsorshipRefused } from '../gas/policy-checks.ts'
import { RPC_INVALID_PARAMS, RpcError } from '../jsonrpc.ts'
import { createLogger } from '../logger.ts'
import { answerJsonRpc, toJsonRpcError } from './jsonrpc-errors.ts'

/**
 * The funnel's rules, one row each, with the exact objects every surface answered before it
 * was one function (the surfaces' own tests pin them over HTTP: src/rpc/proxy.test.ts,
 * src/bundler/bundler.routes.test.ts, src/gas/sponsor-erc7677.test.ts, src/alchemy/*.test.ts).
 */
const logger = createLogger('silent')
const pass = { logger, what: 'test' }
const hide = { logger, what: 'test', rpcErrors: 'internal' } as const

describe('toJsonRpcError', () => {
  it('passes an RpcError on with its code, message and data, unless the surface hides them', () => {
    const err = new RpcError(-32000, 'execution reverted', '0x08c379a0')
    expect(toJsonRpcError(err, pass)).toEqual({
      code: -32000,
      message: 'execution reverted',
      data: '0x08c379a0',
    })
    expect(toJsonRpcError(err, hide)).toEqual({ code: -32603, message: 'internal error' })
  })

  it('answers an upstream failure with the message naming the network (it is an RpcError)', () => {
    const err = new UpstreamUnavailableError(
      'ethereum-devnet',
      'timeout',
      'ethereum-devnet: every upstream timed out',
    )
    expect(toJsonRpcError(err, pass)).toEqual({ code: -32603, message: err.message })
  })

  it("answers a BundlerError with its ERC-7769 code, bigints in data as hex; a node failure keeps only the method's message", () => {
    const refused = new BundlerError(BundlerErrorCode.stakeTooLow, 'paymaster stake too low', {
      minimumStake: 10n,
    })
    expect(toJsonRpcError(refused, hide)).toEqual({
      code: -32505,
      message: 'paymaster stake too low',
      data: { minimumStake: '0xa' },
    })
    const node = new BundlerError(BundlerErrorCode.internal, 'eth_call failed: timeout', { ignored: 1 })
    expect(toJsonRpcError(node, hide)).toEqual({ code: -32603, message: 'eth_call failed: timeout' })
  })

  it('answers a sponsorship refusal with its rule, and retryAfter for a rate rule', () => {
    const forbidden = new SponsorshipRefused({ rule: 'status', message: 'policy gp_1 is paused' })
    expect(toJsonRpcError(forbidden, hide)).toEqual({
      code: -32003,
      message: 'policy gp_1 is paused',
      data: { rule: 'status' },
    })
    const limited = new SponsorshipRefused({ rule: 'status', message: 'slow down', retryAfterSeconds: 7 })
    expect(toJsonRpcError(limited, hide)).toEqual({
      code: -32005,
      message: 'slow down',
      data: { rule: 'status', retryAfter: 7 },
    })
  })

  it("answers a client mistake -32602 with the service's message, anything else -32603 without internals", () => {
    expect(toJsonRpcError(invalidRequest('policyId: unknown'), pass)).toEqual({
      code: RPC_INVALID_PARAMS,
      message: 'policyId: unknown',
    })
    expect(toJsonRpcError(notFound('no such webhook'), hide)).toEqual({
      code: -32602,
      message: 'no such webhook',
    })
    expect(toJsonRpcError(new HalyardError('forbidden', 'not yours'), pass)).toEqual({
      code: -32603,
      message: 'internal error',
    })
    expect(toJsonRpcError(new Error('secret detail'), pass)).toEqual({
      code: -32603,
      message: 'internal error',
    })
  })

  it('answerJsonRpc gives the result, or the error as the funnel answers it', async () => {
    expect(await answerJsonRpc(pass, async () => '0x1')).toEqual({ result: '0x1' })
    expect(
      await answerJsonRpc(pass, async () => {
        throw invalidRequest('bad')
      }),
    ).toEqual({ error: { code: -32602, message: 'bad' } })
  })
})
