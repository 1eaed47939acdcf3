import { encodeFunctionData, parseAbi, parseEther, toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { DEV_ACCOUNT } from '../devnet/demo.ts'
import { rpc } from '../devnet/multicall3.ts'
import type { Address, Hex } from '../types.ts'
import type { BundlerFixture } from './bundler-fixture.ts'
import { parseUserOperation } from './schema.ts'
import type { EntryPointVersion, UserOperation } from './types.ts'

/**
 * Test-only: hand-assembled accounts and paymasters that each break one ERC-7562 rule during
 * validation (or none), installed with anvil_setCode at fresh addresses. Each answers every call
 * the way validation expects (validationData 0: no signature is checked), so the EntryPoint's
 * simulation passes and only the rules can refuse them — unless asked to fail validation itself
 * (an aggregator in validationData, a reverting paymaster).
 */

const word = (a: Address) => a.slice(2).toLowerCase()

interface AccountOptions {
  banned?: 'TIMESTAMP' | 'NUMBER'
  callsEmpty?: Address
  oogInCall?: boolean
  /** What validateUserOp returns instead of 0 (an aggregator, a time range). */
  validationData?: bigint
}

/**
 * Account runtime: [banned opcode, POP] [CALL(gas, empty address, 0)] then pays the prefund
 * (calldata word at 0x44 of validateUserOp, v0.6 and v0.7 alike) to the caller and returns 0.
 *   PUSH1 0 ×4 · PUSH1 0x44 CALLDATALOAD · CALLER · GAS · CALL · POP · MSTORE(0, 0) · RETURN(0, 32)
 */
function accountRuntime(opts: AccountOptions): Hex {
  // oogInCall: called without calldata (by itself) it loops until out of gas; validation calls
  // itself with 5000 gas and ignores the failure:
  //   CALLDATASIZE PUSH1 8 JUMPI · JUMPDEST PUSH1 4 JUMP · JUMPDEST · CALL(5000, ADDRESS, 0) POP
  let code = opts.oogInCall
    ? '36600857' + '5b600456' + '5b' + '6000600060006000' + '6000306113' + '88f150'
    : ''
  if (opts.banned === 'TIMESTAMP') code += '4250'
  if (opts.banned === 'NUMBER') code += '4350'
  if (opts.callsEmpty) code += `60006000600060006000${`73${word(opts.callsEmpty)}`}5af150`
  const validationData = opts.validationData
    ? `7f${opts.validationData.toString(16).padStart(64, '0')}`
    : '6000'
  code += '6000600060006000604435335af150' + `${validationData}600052` + '60206000f3'
  return `0x${code}`
}

interface PaymasterOptions {
  readsOwnStorage?: boolean
  /** validatePaymasterUserOp reverts (with no data). */
  reverts?: boolean
}

/**
 * Paymaster runtime (v0.7 validatePaymasterUserOp): [SLOAD(0), POP] then returns
 * abi.encode(bytes context = "", uint256 validationData = 0) = 0x40 ‖ 0 ‖ 0, or reverts.
 */
function paymasterRuntime(opts: PaymasterOptions): Hex {
  if (opts.reverts) return '0x600080fd'
  let code = opts.readsOwnStorage ? '60005450' : ''
  code += '6040600052' + '6000602052' + '6000604052' + '60606000f3'
  return `0x${code}`
}

const depositToAbi = parseAbi(['function depositTo(address account) payable'])
const getNonceAbi = parseAbi(['function getNonce(address sender, uint192 key) view returns (uint256)'])

export function ruleBreakers(fx: BundlerFixture) {
  const anvil = (method: string, params: unknown[]) => rpc(fx.anvil.url, method, params)
  const install = async (runtime: Hex): Promise<Address> => {
    const address = privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
    await anvil('anvil_setCode', [address, runtime])
    return address
  }
  return {
    /** A deployed, funded account. */
    async account(opts: AccountOptions): Promise<Address> {
      const address = await install(accountRuntime(opts))
      await fx.fund(address)
      return address
    },

    /** A v0.7 paymaster with 1 ETH deposited at the EntryPoint and no stake. */
    async paymaster(opts: PaymasterOptions): Promise<Address> {
      const address = await install(paymasterRuntime(opts))
      const hash = (await anvil('eth_sendTransaction', [
        {
          from: DEV_ACCOUNT,
          to: fx.aa.entryPoints.v07,
          value: toHex(parseEther('1')),
          data: encodeFunctionData({ abi: depositToAbi, functionName: 'depositTo', args: [address] }),
        },
      ])) as Hex
      await fx.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
      return address
    },

    /** An op of `account` (no initCode, no call, no signature) with fixed, ample gas. */
    async opOf(account: Address, version: EntryPointVersion): Promise<UserOperation> {
      const nonce = await fx.client.readContract({
        address: fx.aa.entryPoints[version],
        abi: getNonceAbi,
        functionName: 'getNonce',
        args: [account, 0n],
      })
      const fees = await fx.fees()
      const raw: Record<string, unknown> = {
        sender: account,
        nonce: toHex(nonce),
        callData: '0x',
        callGasLimit: toHex(10_000n),
        verificationGasLimit: toHex(150_000n),
        preVerificationGas: toHex(60_000n),
        maxFeePerGas: toHex(fees.maxFeePerGas),
        maxPriorityFeePerGas: toHex(fees.maxPriorityFeePerGas),
        signature: '0x',
      }
      if (version === 'v06') Object.assign(raw, { initCode: '0x', paymasterAndData: '0x' })
      return parseUserOperation(raw, version)
    },
  }
}
