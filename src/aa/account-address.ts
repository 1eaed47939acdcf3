import { concat, encodeAbiParameters, encodeFunctionData, getContractAddress, keccak256, toHex } from 'viem'
import { type Address, type Hex, toLowerAddress } from '../types.ts'
import { artifact, simpleAccountAbi } from './contracts.ts'

/**
 * Local computation of SimpleAccountFactory v0.7 wallet addresses, so that creating a wallet
 * needs no chain call: the factory deploys `ERC1967Proxy(implementation, initialize(owner))` with
 * CREATE2 and `salt`, and `getAddress(owner, salt)` hashes exactly that init code.
 */

/**
 * The ERC1967Proxy creation code the factory embeds. Solidity appends the creation code of
 * contracts created with `new` after the runtime code and before the contract's own CBOR metadata
 * (its last two bytes give the metadata length); the embedded code starts with the usual
 * `6080604052` free-memory-pointer prologue. Taking it from the pinned factory artifact keeps it
 * byte-identical to what the factory hashes; start-up and dev-mode checks compare the result with
 * the factory's own `getAddress` on chain.
 */
function embeddedProxyCreationCode(factoryRuntime: Hex): Hex {
  const hex = factoryRuntime.slice(2)
  const metadataBytes = Number.parseInt(hex.slice(-4), 16) + 2
  const end = hex.length - metadataBytes * 2
  let start = -1
  for (let i = hex.indexOf('6080604052', 2); i >= 0; i = hex.indexOf('6080604052', i + 1)) {
    if (i % 2 === 0) {
      start = i
      break
    }
  }
  if (start < 0 || start >= end) throw new Error('SimpleAccountFactory artifact has no embedded proxy code')
  return `0x${hex.slice(start, end)}`
}

let proxyCode: Hex | undefined
function proxyCreationCode(): Hex {
  proxyCode ??= embeddedProxyCreationCode(artifact('v07', 'SimpleAccountFactory').deployedBytecode)
  return proxyCode
}

/**
 * The account implementation a SimpleAccountFactory creates in its constructor: the factory's
 * first CREATE, and a contract's nonce starts at 1 (EIP-161).
 */
export function factoryImplementation(factory: Address): Address {
  return toLowerAddress(getContractAddress({ from: factory, nonce: 1n }))
}

/** `SimpleAccountFactory(factory).getAddress(owner, salt)`, computed locally. */
export function simpleAccountAddress(factory: Address, owner: Address, salt: bigint): Address {
  const init = encodeFunctionData({ abi: simpleAccountAbi, functionName: 'initialize', args: [owner] })
  const args = encodeAbiParameters(
    [{ type: 'address' }, { type: 'bytes' }],
    [factoryImplementation(factory), init],
  )
  const address = getContractAddress({
    opcode: 'CREATE2',
    from: factory,
    salt: toHex(salt, { size: 32 }),
    bytecodeHash: keccak256(concat([proxyCreationCode(), args])),
  })
  return toLowerAddress(address)
}
