import { encodeAbiParameters, pad, toHex } from 'viem'
import { describe, expect, it } from 'vitest'
import { ALICE, nftsFixture } from '../../test/fixtures/nfts/nfts-fixture.ts'
import { type Behaviour, hostileContractInitcode } from '../../test/helpers/evm-code.ts'
import { storageBackends } from '../../test/helpers/storage.ts'
import { DEV_ACCOUNT } from '../devnet/demo.ts'
import type { Address, Hash, Hex } from '../types.ts'

/** Selectors (first 4 bytes of keccak256 of the signature). */
const SEL = {
  name: '06fdde03',
  symbol: '95d89b41',
  decimals: '313ce567',
  totalSupply: '18160ddd',
  ownerOf: '6352211e',
  tokenURI: 'c87b56dd',
  uri: '0e89341c',
  supportsInterface: '01ffc9a7',
}

/** An ABI `string` answer holding arbitrary bytes (not necessarily UTF-8). */
const abiBytesString = (bytes: Hex): Hex => {
  const len = (bytes.length - 2) / 2
  const padded = bytes.slice(2).padEnd(Math.ceil(len / 32) * 64, '0')
  return `0x${toHex(32n, { size: 32 }).slice(2)}${toHex(BigInt(len), { size: 32 }).slice(2)}${padded}` as Hex
}
const word = (n: bigint) => toHex(n, { size: 32 })

/**
 * Token and NFT contract reads are chain data too. Names with control characters,
 * bidi overrides or invalid UTF-8, bytes32 names, reverting and gas-burning `tokenURI` — each
 * from a hand-assembled contract (test/helpers/evm-code.ts) — must give clean text or null,
 * never a 500.
 */
describe.each(storageBackends())('hostile token and NFT contracts on $name', (backend) => {
  const fx = nftsFixture(backend)

  async function deploy(cases: Record<string, Behaviour>, fallback: Behaviour = 'revert'): Promise<Address> {
    const hash = await fx.dev.rpc<Hash>('eth_sendTransaction', [
      { from: DEV_ACCOUNT, data: hostileContractInitcode(cases, fallback) },
    ])
    const receipt = await fx.dev.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    expect(receipt.status).toBe('success')
    return (receipt.contractAddress as string).toLowerCase() as Address
  }

  it('token metadata: control characters, bidi overrides and invalid UTF-8 removed; bytes32 read', async () => {
    // "U\0S\aD" + U+202E (right-to-left override) + a byte that is never UTF-8.
    const name = abiBytesString(`0x55005307${'44'}e280aeff`)
    const token = await deploy({
      [SEL.name]: name,
      [SEL.symbol]: pad(`0x4d014b52`, { dir: 'right', size: 32 }), // bytes32 "M\x01KR"
      [SEL.decimals]: word(6n),
      [SEL.totalSupply]: word(1000n),
    })
    const r = await fx.get(`/tokens/ethereum-devnet/metadata/${token}`)
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(r.body).toMatchObject({ name: 'USD\uFFFD', symbol: 'MKR', decimals: 6 })

    // name() burns all its gas and symbol() reverts: no name, no symbol, still 200.
    const burner = await deploy({ [SEL.name]: 'burn', [SEL.symbol]: 'revert', [SEL.decimals]: word(18n) })
    const b = await fx.get(`/tokens/ethereum-devnet/metadata/${burner}`)
    expect(b.status, JSON.stringify(b.body)).toBe(200)
    expect(b.body).toMatchObject({ name: null, symbol: null })
  })

  it('NFT metadata: a reverting or gas-burning tokenURI answers without a URI, never a 500', async () => {
    const nftCases = (tokenURI: Behaviour): Record<string, Behaviour> => ({
      [SEL.ownerOf]: pad(ALICE),
      [SEL.tokenURI]: tokenURI,
      [SEL.name]: encodeAbiParameters([{ type: 'string' }], ['Evil\u0000\u202eNFT\n']),
      [SEL.symbol]: encodeAbiParameters([{ type: 'string' }], ['E'.repeat(5000)]),
    })
    for (const behaviour of ['revert', 'burn'] as const) {
      const nft = await deploy(nftCases(behaviour))
      const r = await fx.nftMeta(nft, 1n)
      expect(r.status, `${behaviour}: ${JSON.stringify(r.body)}`).toBe(200)
      expect(r.body, behaviour).toMatchObject({ owner: ALICE, token_uri: null, metadata: null })
      const c = await fx.get(`/nfts/ethereum-devnet/collection/${nft}`)
      expect(c.status, `${behaviour}: ${JSON.stringify(c.body)}`).toBe(200)
      // Control characters and the bidi override removed; a 5,000-character symbol is no symbol.
      expect(c.body).toMatchObject({ name: 'EvilNFT', symbol: null })
    }
  })
})
