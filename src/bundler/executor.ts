import { keccak256 } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { type Address, type Hash, type Hex, toLowerAddress, toLowerHash } from '../types.ts'

/**
 * An executor key: signs bundle transactions. The key never leaves this object (not logged,
 * not stored); the signed transaction is stored so a crash between signing and sending can be
 * repaired by re-broadcasting exactly the same bytes.
 */
export class Executor {
  readonly address: Address
  readonly #account: ReturnType<typeof privateKeyToAccount>

  constructor(
    privateKey: Hex,
    private readonly chainId: number,
  ) {
    this.#account = privateKeyToAccount(privateKey)
    this.address = toLowerAddress(this.#account.address)
  }

  async sign(tx: {
    to: Address
    data: Hex
    gas: bigint
    nonce: bigint
    maxFeePerGas: bigint
    maxPriorityFeePerGas: bigint
  }): Promise<{ hash: Hash; raw: Hex }> {
    const raw = await this.#account.signTransaction({
      type: 'eip1559',
      chainId: this.chainId,
      to: tx.to,
      data: tx.data,
      gas: tx.gas,
      nonce: Number(tx.nonce),
      maxFeePerGas: tx.maxFeePerGas,
      maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
      value: 0n,
    })
    return { hash: toLowerHash(keccak256(raw)), raw }
  }

  toJSON() {
    return { address: this.address }
  }
}

/**
 * Anvil's well-known dev accounts 8 and 9 (mnemonic "test test … junk", public): dev mode's
 * executors, away from account 0, which the devnet tooling itself sends from.
 */
export const ANVIL_EXECUTOR_KEYS: readonly Hex[] = [
  '0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97',
  '0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6',
]
