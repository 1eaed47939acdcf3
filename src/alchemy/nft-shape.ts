import { getAddress } from 'viem'
import type { NftCollection } from '../nfts/service.ts'
import type { Address } from '../types.ts'

/**
 * Halyard's NFT data in the shape of Alchemy's NFT API v3, with every field alchemy-sdk 3.6.5
 * reads (its getNftFromRaw / getNftContractFromRaw): each NFT carries a `contract` object with
 * a `spamClassifications` array, or the SDK throws. What Halyard does not know (OpenSea data,
 * deployer, spam scores, cached image sizes) is null, never invented; the SDK turns nulls into
 * absent fields.
 */

export type AlchemyTokenType =
  | 'ERC721'
  | 'ERC1155'
  | 'NOT_A_CONTRACT'
  | 'NO_SUPPORTED_NFT_STANDARD'
  | 'UNKNOWN'

/** What Halyard knows of a contract, from NftService.collection or the index. */
export interface ContractView {
  address: Address
  tokenType: AlchemyTokenType
  name: string | null
  symbol: string | null
  totalSupply: string | null
  description: string | null
  imageUrl: string | null
  bannerImageUrl: string | null
}

export function contractFromCollection(c: NftCollection): ContractView {
  return {
    address: c.contract,
    tokenType: c.standard,
    name: c.name,
    symbol: c.symbol,
    totalSupply: String(c.total_supply),
    description: c.description,
    imageUrl: c.image_url,
    bannerImageUrl: c.banner_url,
  }
}

/** A contract Halyard could not describe: its address and why, as Alchemy's token types say it. */
export function unknownContract(address: Address, tokenType: AlchemyTokenType): ContractView {
  return {
    address,
    tokenType,
    name: null,
    symbol: null,
    totalSupply: null,
    description: null,
    imageUrl: null,
    bannerImageUrl: null,
  }
}

/** Alchemy checksums contract addresses in NFT API v3 answers. */
export const checksum = (a: Address): string => getAddress(a)

/** getContractMetadata: a contract. The contractURI (ERC-7572) document fills openSeaMetadata's images and text. */
export function contractShape(c: ContractView) {
  return {
    address: checksum(c.address),
    name: c.name,
    symbol: c.symbol,
    totalSupply: c.totalSupply,
    tokenType: c.tokenType,
    contractDeployer: null,
    deployedBlockNumber: null,
    openSeaMetadata: {
      floorPrice: null,
      collectionName: c.name,
      collectionSlug: null,
      safelistRequestStatus: null,
      imageUrl: c.imageUrl,
      bannerImageUrl: c.bannerImageUrl,
      description: c.description,
      externalUrl: null,
      twitterUsername: null,
      discordUrl: null,
      lastIngestedAt: null,
    },
  }
}

/** A contract as embedded in an NFT: Halyard classifies nothing as spam. */
export function nftContractShape(c: ContractView) {
  return { ...contractShape(c), isSpam: false, spamClassifications: [] as string[] }
}

/** What Halyard knows of one token. */
export interface TokenView {
  tokenId: bigint
  tokenType: AlchemyTokenType
  name: string | null
  description: string | null
  tokenUri: string | null
  /** The image as the metadata gives it, and through the configured gateways. */
  image: string | null
  imageGateway: string | null
  /** The metadata document; null when not fetched or not loadable (`error` says why). */
  metadata: Record<string, unknown> | null
  error: string | null
  fetchedAt: Date | null
}

const text = (doc: Record<string, unknown> | null, key: string): string | null => {
  const v = doc?.[key]
  return typeof v === 'string' && v.trim() !== '' ? v : null
}

/** One NFT with metadata (getNFTMetadata, and lists with withMetadata=true). */
export function nftShape(contract: ContractView, t: TokenView) {
  const animation = text(t.metadata, 'animation_url')
  return {
    contract: nftContractShape(contract),
    tokenId: t.tokenId.toString(),
    tokenType: t.tokenType,
    // The SDK tells a full NFT from a bare one by `name` being present: null, never absent.
    name: t.name,
    description: t.description,
    tokenUri: t.tokenUri,
    image: {
      cachedUrl: t.imageGateway,
      thumbnailUrl: null,
      pngUrl: null,
      contentType: null,
      size: null,
      originalUrl: t.image,
    },
    animation: { cachedUrl: null, contentType: null, size: null, originalUrl: animation },
    raw: { tokenUri: t.tokenUri, metadata: t.metadata ?? {}, error: t.error },
    collection: null,
    mint: null,
    owners: null,
    timeLastUpdated: (t.fetchedAt ?? new Date()).toISOString(),
  }
}

/** The indexer's head: the block a holdings answer is valid at. */
export interface ValidAt {
  blockNumber: number | null
  blockHash: string | null
  blockTimestamp: null
}
