import { type Abi, decodeFunctionResult, encodeFunctionData, parseAbi } from 'viem'
import { decodeTokenText, MAX_NAME_CHARS, MAX_SYMBOL_CHARS } from '../chains/token-text.ts'
import type { CallResult, ContractCall } from '../tokens/multicall.ts'
import { type Address, toLowerAddress } from '../types.ts'

/** ERC-165 interface ids of ERC-721 and ERC-1155, as those standards define them. */
export const ERC721_INTERFACE = '0x80ac58cd'
export const ERC1155_INTERFACE = '0xd9b67a26'

const ABI = parseAbi([
  'function supportsInterface(bytes4 id) view returns (bool)',
  'function name() view returns (string)',
  'function symbol() view returns (string)',
  'function totalSupply() view returns (uint256)',
  'function contractURI() view returns (string)',
  'function ownerOf(uint256 id) view returns (address)',
  'function tokenURI(uint256 id) view returns (string)',
  'function uri(uint256 id) view returns (string)',
  'function exists(uint256 id) view returns (bool)',
])
// A separate ABI: ERC1155Supply's totalSupply(uint256) overloads the ERC-20/721 one.
const SUPPLY_OF_ABI = parseAbi(['function totalSupply(uint256 id) view returns (uint256)'])

/** Anything reading many view calls at once (the Token API's Multicall3 reader). */
export interface CallReader {
  read(calls: readonly ContractCall[]): Promise<CallResult[]>
}

type Fn =
  | 'supportsInterface'
  | 'name'
  | 'symbol'
  | 'totalSupply'
  | 'contractURI'
  | 'ownerOf'
  | 'tokenURI'
  | 'uri'
  | 'exists'

const enc = (target: Address, functionName: Fn, args: readonly unknown[] = []): ContractCall => ({
  target,
  data: encodeFunctionData({ abi: ABI as Abi, functionName, args } as Parameters<
    typeof encodeFunctionData
  >[0]),
})

/** A view call's value, or null when it reverted, is missing or returned something malformed. */
function dec<T>(r: CallResult | undefined, functionName: Fn, abi: Abi = ABI): T | null {
  if (!r?.success || r.data === '0x') return null
  try {
    return decodeFunctionResult({ abi, functionName, data: r.data }) as T
  } catch {
    return null
  }
}

/** `string` (or early contracts' `bytes32`) answers, through the shared decoder (src/chains/token-text.ts). */
function decText(r: CallResult | undefined, maxChars: number): string | null {
  return r?.success ? decodeTokenText(r.data, maxChars) : null
}

export interface ContractInfo {
  erc721: boolean
  erc1155: boolean
  name: string | null
  symbol: string | null
  totalSupply: bigint | null
  contractUri: string | null
}

/** ERC-165 answers plus the collection-level views, in one Multicall3 round trip. */
export async function readContractInfo(reader: CallReader, contract: Address): Promise<ContractInfo> {
  const r = await reader.read([
    enc(contract, 'supportsInterface', [ERC721_INTERFACE]),
    enc(contract, 'supportsInterface', [ERC1155_INTERFACE]),
    enc(contract, 'name'),
    enc(contract, 'symbol'),
    enc(contract, 'totalSupply'),
    enc(contract, 'contractURI'),
  ])
  return {
    erc721: dec<boolean>(r[0], 'supportsInterface') === true,
    erc1155: dec<boolean>(r[1], 'supportsInterface') === true,
    name: decText(r[2], MAX_NAME_CHARS),
    symbol: decText(r[3], MAX_SYMBOL_CHARS),
    totalSupply: dec<bigint>(r[4], 'totalSupply'),
    contractUri: decText(r[5], 1_000_000),
  }
}

export interface TokenReads {
  /** ERC-721 ownerOf; null when it reverts (no such token) or the contract has none. */
  owner: Address | null
  /** tokenURI (ERC-721) or uri (ERC-1155), raw as the contract returns it. */
  uri: string | null
  /** ERC-1155 `exists(id)` / `totalSupply(id) > 0` where the contract has them; else null. */
  exists1155: boolean | null
}

/**
 * The per-token views for `standard`; with `probe` (standard unknown: no ERC-165, nothing in
 * the index) both standards' views are read, and the caller decides from what answered.
 */
export async function readToken(
  reader: CallReader,
  contract: Address,
  tokenId: bigint,
  standard: 'ERC721' | 'ERC1155' | 'probe',
): Promise<TokenReads & { uri1155: string | null }> {
  const calls: ContractCall[] = []
  const want721 = standard !== 'ERC1155'
  const want1155 = standard !== 'ERC721'
  if (want721) calls.push(enc(contract, 'ownerOf', [tokenId]), enc(contract, 'tokenURI', [tokenId]))
  if (want1155) {
    calls.push(enc(contract, 'uri', [tokenId]), enc(contract, 'exists', [tokenId]), {
      target: contract,
      data: encodeFunctionData({ abi: SUPPLY_OF_ABI, functionName: 'totalSupply', args: [tokenId] }),
    })
  }
  const r = await reader.read(calls)
  const at = want721 ? 2 : 0
  const owner = want721 ? dec<Address>(r[0], 'ownerOf') : null
  const exists = want1155 ? dec<boolean>(r[at + 1], 'exists') : null
  const supply = want1155 ? dec<bigint>(r[at + 2], 'totalSupply', SUPPLY_OF_ABI as Abi) : null
  return {
    owner: owner === null ? null : toLowerAddress(owner),
    uri: want721 ? decText(r[1], 1_000_000) : null,
    uri1155: want1155 ? decText(r[at], 1_000_000) : null,
    exists1155: exists ?? (supply === null ? null : supply > 0n),
  }
}

/** tokenURI / uri of many tokens in one Multicall3 round trip (raw; `{id}` not yet expanded). */
export async function readUris(
  reader: CallReader,
  items: readonly { contract: Address; tokenId: bigint; standard: 'ERC721' | 'ERC1155' }[],
): Promise<(string | null)[]> {
  if (items.length === 0) return []
  const fns = items.map((i): Fn => (i.standard === 'ERC721' ? 'tokenURI' : 'uri'))
  const r = await reader.read(items.map((i, k) => enc(i.contract, fns[k] as Fn, [i.tokenId])))
  return items.map((_, k) => decText(r[k], 1_000_000))
}
