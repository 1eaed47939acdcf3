import { decodeAbiParameters, decodeFunctionData, type Hex, hexToBigInt, parseAbi } from 'viem'
import { type Address, toLowerAddress } from '../types.ts'

/**
 * The calls a UserOperation will make, read from the account's callData, for `allowed_contracts`
 * and `allowed_methods`. Decoded: SimpleAccount `execute` and `executeBatch` (v0.6 and v0.7
 * signatures; LightAccount shares them), Coinbase Smart Wallet's tuple `executeBatch`, ERC-7579
 * `execute(mode, executionCalldata)` (Kernel, Nexus, Safe7579: single and batch call types) and
 * the Safe 4337 module's `executeUserOp`. Anything else — and delegatecalls, whose target runs
 * code in the account's name — is undecodable: null.
 */

export interface AccountCall {
  to: Address
  value: bigint
  /** The 4-byte selector, or null for a call without data (a plain transfer). */
  selector: Hex | null
}

const accountAbi = parseAbi([
  'function execute(address dest, uint256 value, bytes func)',
  'function executeBatch(address[] dest, bytes[] func)',
  'function executeBatch(address[] dest, uint256[] value, bytes[] func)',
  'function executeBatch((address target, uint256 value, bytes data)[] calls)',
  'function execute(bytes32 mode, bytes executionCalldata)',
  'function executeUserOp(address to, uint256 value, bytes data, uint8 operation)',
  'function executeUserOpWithErrorString(address to, uint256 value, bytes data, uint8 operation)',
])

const call = (to: string, value: bigint, data: Hex): AccountCall => ({
  to: toLowerAddress(to),
  value,
  selector: data.length >= 10 ? `0x${data.slice(2, 10).toLowerCase()}` : null,
})

export function decodeAccountCalls(callData: Hex): AccountCall[] | null {
  if (callData === '0x') return []
  let decoded: ReturnType<typeof decodeFunctionData<typeof accountAbi>>
  try {
    decoded = decodeFunctionData({ abi: accountAbi, data: callData })
  } catch {
    return null
  }
  try {
    switch (decoded.functionName) {
      case 'execute': {
        const args = decoded.args
        // execute(address,uint256,bytes) decodes to three values, ERC-7579 execute(bytes32,bytes) to two.
        if (args.length === 3) return [call(args[0], args[1], args[2])]
        return erc7579(args[0], args[1])
      }
      case 'executeBatch': {
        const args = decoded.args
        if (args.length === 1) return args[0].map((c) => call(c.target, c.value, c.data))
        if (args.length === 2) {
          const [dest, func] = args
          if (dest.length !== func.length) return null
          return dest.map((d, i) => call(d, 0n, func[i] as Hex))
        }
        const [dest, value, func] = args
        if (dest.length !== func.length || (value.length !== 0 && value.length !== dest.length)) return null
        return dest.map((d, i) => call(d, value[i] ?? 0n, func[i] as Hex))
      }
      case 'executeUserOp':
      case 'executeUserOpWithErrorString': {
        const [to, value, data, operation] = decoded.args
        return operation === 0 ? [call(to, value, data)] : null
      }
    }
  } catch {
    return null
  }
  return null
}

/**
 * ERC-7579 `execute(mode, executionCalldata)`: mode byte 0 is the call type (0x00 single:
 * target(20) ‖ value(32) ‖ data; 0x01 batch: abi.encode((address,uint256,bytes)[])).
 */
function erc7579(mode: Hex, exec: Hex): AccountCall[] | null {
  const callType = mode.slice(2, 4)
  if (callType === '00') {
    if (exec.length < 2 + 52 * 2) return null
    const target = `0x${exec.slice(2, 42)}`
    return [call(target, hexToBigInt(`0x${exec.slice(42, 106)}`), `0x${exec.slice(106)}`)]
  }
  if (callType === '01') {
    const [calls] = decodeAbiParameters(
      [
        {
          type: 'tuple[]',
          components: [
            { name: 'target', type: 'address' },
            { name: 'value', type: 'uint256' },
            { name: 'data', type: 'bytes' },
          ],
        },
      ],
      exec,
    )
    return calls.map((c) => call(c.target, c.value, c.data))
  }
  return null
}
