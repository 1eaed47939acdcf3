/**
 * Form B's NFT transfer payload includes full token metadata: mints, transfers and
 * burns of form B `nft_transfer` webhooks carry `transferType` (`mint` | `transfer` | `burn`,
 * set when the event is built) and `metadata` — the NFT API's view of the token (name,
 * description, imageUrl, traits, tokenUri and the document as fetched; src/nfts caches it) —
 * added by the sender just before each attempt. Not at match time: reading metadata may mean
 * fetching a document from the token's URI, which must not hold up the indexer's transaction
 * (and on PGlite the NFT tables are behind that transaction's one connection). A lookup is
 * bounded by DEADLINE_MS; what is not known by then goes out as `metadata: null` with
 * `metadataError` saying why. A burned ERC-721 has no token left to describe (tokenURI
 * reverts): its metadata is null with the reason. Form A keeps its exact fields.
 */
export type NftMetadataSource = (
  network: string,
  contract: string,
  tokenId: bigint,
) => Promise<Record<string, unknown> | null>

export const DEADLINE_MS = 2_000
const ZERO = `0x${'0'.repeat(40)}`

export const transferType = (from: unknown, to: unknown) =>
  from === ZERO ? 'mint' : to === ZERO ? 'burn' : 'transfer'

/** The body with the token's metadata in `data` (a form B NFT_TRANSFER envelope), re-serialised. */
export async function withNftMetadata(source: NftMetadataSource, body: string): Promise<string> {
  let env: { chain?: unknown; data?: Record<string, unknown> }
  try {
    env = JSON.parse(body) as typeof env
  } catch {
    return body
  }
  const data = env.data
  if (!data || typeof env.chain !== 'string' || typeof data.contract !== 'string') return body
  if (typeof data.tokenId !== 'string' || !/^\d{1,78}$/.test(data.tokenId)) return body
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<{ value: null; error: string }>((resolve) => {
    timer = setTimeout(
      () => resolve({ value: null, error: `metadata not read within ${DEADLINE_MS} ms` }),
      DEADLINE_MS,
    )
  })
  const got = await Promise.race([
    source(env.chain, data.contract, BigInt(data.tokenId)).then(
      (value) => ({ value, error: value === null ? 'no metadata for this token' : null }),
      (err: Error) => ({ value: null, error: err.message }),
    ),
    late,
  ])
  clearTimeout(timer)
  data.metadata = got.value
  data.metadataError = got.error
  return JSON.stringify(env)
}
