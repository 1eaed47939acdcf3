import { describe, expect, it } from 'vitest'
import { codeForReason, parseValidationData } from './entrypoint.ts'
import { parseEntryPoint, parseUserOperation, toRpcUserOperation } from './schema.ts'
import { calcPreVerificationGas, paymasterAndDataOf, userOpHash } from './userop.ts'

const SENDER = '0x1111111111111111111111111111111111111111'
const FACTORY = '0x2222222222222222222222222222222222222222'
const PAYMASTER = '0x3333333333333333333333333333333333333333'
const EP07 = '0x0000000071727de22e5e9d8baf0edac6f37da032'

const v07 = {
  sender: SENDER,
  nonce: '0x0',
  factory: FACTORY,
  factoryData: '0xabcd',
  callData: '0x1234',
  callGasLimit: '0x5208',
  verificationGasLimit: '0x10000',
  preVerificationGas: '0xc350',
  maxFeePerGas: '0x3b9aca00',
  maxPriorityFeePerGas: '0x3b9aca00',
  paymaster: PAYMASTER,
  paymasterVerificationGasLimit: '0x7530',
  paymasterPostOpGasLimit: '0x0',
  paymasterData: '0xbeef',
  signature: `0x${'11'.repeat(65)}`,
}

const reject = (raw: unknown, message: string | RegExp, estimating = false) => {
  expect(() => parseUserOperation(raw, 'v07', { estimating })).toThrow(
    expect.objectContaining({
      code: -32602,
      message:
        typeof message === 'string' ? expect.stringContaining(message) : expect.stringMatching(message),
    }),
  )
}

describe('UserOperation params', () => {
  it('reads the v0.7 unpacked shape and the packed initCode/paymasterAndData shape into the same op', () => {
    const unpacked = parseUserOperation(v07, 'v07')
    const {
      factory,
      factoryData,
      paymaster,
      paymasterVerificationGasLimit,
      paymasterPostOpGasLimit,
      paymasterData,
      ...rest
    } = v07
    const packed = parseUserOperation(
      {
        ...rest,
        initCode: `${factory}${factoryData.slice(2)}`,
        paymasterAndData: paymasterAndDataOf(unpacked),
      },
      'v07',
    )
    expect(packed).toEqual(unpacked)
    expect(unpacked).toMatchObject({
      version: 'v07',
      nonce: 0n,
      callGasLimit: 21000n,
      paymasterVerificationGasLimit: 30000n,
    })
    expect(toRpcUserOperation(unpacked)).toEqual(v07)
    expect(userOpHash(packed, EP07, 1)).toBe(userOpHash(unpacked, EP07, 1))
  })

  it('treats null and absent factory/paymaster fields as none', () => {
    const op = parseUserOperation(
      {
        ...v07,
        factory: null,
        factoryData: null,
        paymaster: null,
        paymasterData: null,
        paymasterVerificationGasLimit: null,
        paymasterPostOpGasLimit: null,
      },
      'v07',
    )
    expect(op).toMatchObject({ factory: null, factoryData: '0x', paymaster: null, paymasterData: '0x' })
  })

  it('names the field a client got wrong', () => {
    reject({ ...v07, sender: '0x12' }, 'userOperation.sender must be a 0x-prefixed 20-byte hex address')
    reject({ ...v07, nonce: 5 }, 'userOperation.nonce must be a 0x-prefixed hex quantity')
    reject({ ...v07, callData: '0x123' }, 'userOperation.callData must be 0x-prefixed hex bytes')
    reject(
      { ...v07, callGasLimit: `0x1${'0'.repeat(32)}` },
      'userOperation.callGasLimit must fit in 128 bits',
    )
    reject({ ...v07, signature: undefined }, 'userOperation.signature is required')
    reject({ ...v07, initCode: '0xabcd' }, 'both initCode and factory/factoryData')
    reject({ ...v07, paymasterAndData: `${PAYMASTER}00` }, 'both paymasterAndData and paymaster')
    reject(
      { ...v07, paymasterPostOpGasLimit: undefined },
      'paymasterPostOpGasLimit is required with userOperation.paymaster',
    )
    reject({ ...v07, factory: undefined }, 'factoryData is set without userOperation.factory')
    reject([], 'userOperation must be an object')
  })

  it('lets estimation leave gas limits and fees out', () => {
    const {
      callGasLimit,
      verificationGasLimit,
      preVerificationGas,
      maxFeePerGas,
      maxPriorityFeePerGas,
      ...bare
    } = v07
    reject(bare, 'userOperation.callGasLimit is required')
    expect(parseUserOperation(bare, 'v07', { estimating: true })).toMatchObject({
      callGasLimit: 0n,
      maxFeePerGas: 0n,
    })
  })

  it('reads the v0.6 shape; an EntryPoint the network does not serve is -32602', () => {
    const op = parseUserOperation(
      { ...v07, initCode: '0x', paymasterAndData: '0x', factory: undefined, factoryData: undefined },
      'v06',
    )
    expect(op).toMatchObject({ version: 'v06', initCode: '0x', paymasterAndData: '0x' })
    expect(() => parseEntryPoint('0x5ff137d4b0fdcd49dca30c7cf57e578a026d2789', [EP07])).toThrow(
      /not supported here; supported: 0x0000/,
    )
    expect(parseEntryPoint(EP07.toUpperCase().replace('0X', '0x'), [EP07])).toBe(EP07)
  })
})

describe('gas and validation data', () => {
  it('charges preVerificationGas per calldata byte (4 zero, 16 non-zero) plus fixed and per-op overhead', () => {
    const op = parseUserOperation(v07, 'v07')
    const base = calcPreVerificationGas(op)
    // 21000 + 18300 + words × 4 + calldata: a rough floor for a ~700-byte op.
    expect(base).toBeGreaterThan(39_300n + 4n * 20n)
    // Another non-zero byte in place of one costs the same; a non-zero byte turned zero saves 12.
    expect(calcPreVerificationGas({ ...op, signature: `0x${'11'.repeat(64)}22` })).toBe(base)
    expect(calcPreVerificationGas({ ...op, callData: '0x1200' }) - base).toBe(-12n)
  })

  it('unpacks validationData (validUntil 0 = forever) and maps AA reasons to ERC-7769 codes', () => {
    const v = (1n << 208n) * 100n + (1n << 160n) * 200n + 1n
    expect(parseValidationData(v)).toEqual({ aggregator: 1n, validAfter: 100, validUntil: 200 })
    expect(parseValidationData(0n).validUntil).toBe(2 ** 48 - 1)
    expect(codeForReason("AA21 didn't pay prefund")).toBe(-32500)
    expect(codeForReason('AA22 expired or not due')).toBe(-32503)
    expect(codeForReason('AA24 signature error')).toBe(-32507)
    expect(codeForReason('AA31 paymaster deposit too low')).toBe(-32508)
    expect(codeForReason('AA33 reverted')).toBe(-32501)
    expect(codeForReason('something else')).toBe(-32500)
  })
})
