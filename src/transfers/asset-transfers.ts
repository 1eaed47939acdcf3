import { z } from 'zod'
import type { Network } from '../chains/registry.ts'
import { formatUnits } from '../common/decimal.ts'
import { describeZodError } from '../common/validation.ts'
import { answerJsonRpc } from '../http/jsonrpc-errors.ts'
import { RPC_INVALID_PARAMS, RpcError, type RpcOutcome } from '../jsonrpc.ts'
import type { Logger } from '../logger.ts'
import { m } from '../rpc/methods/row.ts'
import { type ExecContext, type MethodSpec, variableCost } from '../rpc/methods/spec.ts'
import type { TokenMeta } from '../tokens/store.ts'
import { type Address, addressProblem, toLowerAddress } from '../types.ts'
import { decodeCursor, encodeCursor } from './cursor.ts'
import type { TransferService } from './service.ts'
import { type AddressFilter, type Category, readTransfers, type TransferRow } from './store.ts'

/**
 * `alchemy_getAssetTransfers` answered from Halyard's index, in Alchemy's shapes (alchemy-sdk
 * 3.6.5): one params object, Alchemy's defaults (order asc,
 * excludeZeroValue true, maxCount 0x3e8) and its result fields. An ERC-1155 TransferBatch is one
 * transfer with an `erc1155Metadata` entry per id, as Alchemy shows it; `maxCount` counts
 * transfers, and a batch is never split across pages.
 */

const ALCHEMY_CATEGORIES = ['external', 'internal', 'erc20', 'erc721', 'erc1155', 'specialnft'] as const
type AlchemyCategory = (typeof ALCHEMY_CATEGORIES)[number]
const MAX_COUNT = 1000

const hexQuantity = /^0x[0-9a-fA-F]{1,16}$/
/** Tags the index reads as "no bound": it holds only what it has indexed, up to its head. */
const OPEN_TAGS = new Set(['latest', 'pending', 'safe', 'finalized'])

const blockParam = (name: string) =>
  z
    .unknown()
    .optional()
    .transform((v, ctx): bigint | undefined => {
      if (v === undefined || v === null || (typeof v === 'string' && OPEN_TAGS.has(v))) return undefined
      if (v === 'earliest') return 0n
      if (typeof v === 'string' && hexQuantity.test(v)) return BigInt(v)
      ctx.addIssue({
        code: 'custom',
        message: `${name} must be a 0x-hex block number or latest, earliest, pending, safe, finalized`,
      })
      return z.NEVER
    })

const addressParam = (name: string) =>
  z
    .unknown()
    .optional()
    .transform((v, ctx): Address | undefined => {
      if (v === undefined || v === null) return undefined
      const problem = typeof v === 'string' ? addressProblem(v) : 'must be a 0x-prefixed 20-byte hex address'
      if (problem === undefined) return toLowerAddress(v as string)
      ctx.addIssue({ code: 'custom', message: `${name} ${problem}` })
      return z.NEVER
    })

const flag = (name: string, dflt: boolean) =>
  z
    .boolean({ error: `${name} must be true or false` })
    .nullish()
    .transform((v) => v ?? dflt)

export const assetTransfersParams = z.object({
  fromBlock: blockParam('fromBlock'),
  toBlock: blockParam('toBlock'),
  fromAddress: addressParam('fromAddress'),
  toAddress: addressParam('toAddress'),
  contractAddresses: z
    .array(z.unknown(), { error: 'contractAddresses must be an array of addresses' })
    .max(MAX_COUNT, { error: `contractAddresses must hold at most ${MAX_COUNT} addresses` })
    .nullish()
    .transform((list, ctx): Address[] | undefined => {
      if (!list) return undefined
      const out: Address[] = []
      for (const v of list) {
        const problem =
          typeof v === 'string' ? addressProblem(v) : 'must be a 0x-prefixed 20-byte hex address'
        if (problem !== undefined) {
          ctx.addIssue({ code: 'custom', message: `contractAddresses: ${String(v).slice(0, 50)} ${problem}` })
          return z.NEVER
        }
        out.push(toLowerAddress(v as string))
      }
      return out
    }),
  category: z
    .array(
      z.enum(ALCHEMY_CATEGORIES, { error: `category entries must be ${ALCHEMY_CATEGORIES.join(', ')}` }),
      {
        error: `category must be a non-empty array of ${ALCHEMY_CATEGORIES.join(', ')}`,
      },
    )
    .min(1, { error: 'category must name at least one category' })
    .max(ALCHEMY_CATEGORIES.length * 2, { error: 'category lists a category twice' }),
  order: z
    .enum(['asc', 'desc'], { error: 'order must be asc or desc' })
    .nullish()
    .transform((v) => v ?? 'asc'),
  withMetadata: flag('withMetadata', false),
  excludeZeroValue: flag('excludeZeroValue', true),
  maxCount: z
    .unknown()
    .optional()
    .transform((v, ctx): number => {
      if (v === undefined || v === null) return MAX_COUNT
      const n =
        typeof v === 'string' && hexQuantity.test(v)
          ? Number(BigInt(v))
          : typeof v === 'number' && Number.isSafeInteger(v)
            ? v
            : Number.NaN
      if (n >= 1 && n <= MAX_COUNT) return n
      ctx.addIssue({ code: 'custom', message: `maxCount must be a hex integer between 0x1 and 0x3e8` })
      return z.NEVER
    }),
  pageKey: z
    .unknown()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === null) return undefined
      const pos = typeof v === 'string' ? decodeCursor(v) : undefined
      if (pos) return pos
      ctx.addIssue({ code: 'custom', message: 'pageKey is not a pageKey this method returned' })
      return z.NEVER
    }),
})

export type AssetTransfersParams = z.output<typeof assetTransfersParams>

/** The one params object, or -32602 naming the field. */
export function parseAssetTransfersParams(params: readonly unknown[]): AssetTransfersParams {
  const first = params[0]
  if (params.length !== 1 || typeof first !== 'object' || first === null || Array.isArray(first))
    throw new RpcError(RPC_INVALID_PARAMS, 'invalid params: expected one object [{ category, … }]')
  const r = assetTransfersParams.safeParse(first)
  if (r.success) return r.data
  const issue = r.error.issues[0]
  const field = issue?.path.find((p) => typeof p === 'string')
  const message =
    issue && typeof field === 'string' && issue.message.startsWith(field)
      ? issue.message
      : describeZodError(r.error)
  throw new RpcError(RPC_INVALID_PARAMS, `invalid params: ${message}`)
}

export interface AssetTransfer {
  uniqueId: string
  category: AlchemyCategory
  blockNum: string
  from: string
  to: string | null
  value: number | null
  erc721TokenId: string | null
  erc1155Metadata: { tokenId: string; value: string }[] | null
  tokenId: string | null
  asset: string | null
  hash: string
  rawContract: { value: string | null; address: string | null; decimal: string | null }
  metadata?: { blockTimestamp: string }
}

export interface AssetTransfersResult {
  transfers: AssetTransfer[]
  pageKey?: string
}

/** Rows of one transfer: one row, or every row of one ERC-1155 batch log. */
type Group = TransferRow[]

const hex = (v: bigint | number) => `0x${v.toString(16)}`
const hex32 = (v: bigint) => `0x${v.toString(16).padStart(64, '0')}`

export async function getAssetTransfers(
  transfers: TransferService,
  net: Network,
  p: AssetTransfersParams,
): Promise<AssetTransfersResult> {
  // specialnft is Alchemy's name for CryptoPunks and CryptoKitties, whose pre-standard events
  // the indexer does not decode (src/indexer/decode.ts): the category is accepted, with no rows.
  const categories = [...new Set(p.category)].filter((c): c is Category => c !== 'specialnft')
  const refusal = await transfers.checkInternal(net, categories)
  if (refusal) throw new RpcError(RPC_INVALID_PARAMS, `invalid params: category: ${refusal}`)
  if (categories.length === 0) return { transfers: [] }
  const branch: AddressFilter = { from: p.fromAddress, to: p.toAddress }
  const groups: Group[] = []
  let after = p.pageKey
  let exhausted = false
  // One read in the common case; batches (several rows per transfer) may need another.
  while (groups.length <= p.maxCount && !exhausted) {
    // A batch takes several rows: ask a quarter more than the transfers still needed.
    const need = p.maxCount + 1 - groups.length
    const limit = need + Math.ceil(need / 4) + 1
    const rows = await readTransfers(
      transfers.db,
      {
        network: net.slug,
        categories,
        fromBlock: p.fromBlock,
        toBlock: p.toBlock,
        contracts: p.contractAddresses,
        excludeZeroValue: p.excludeZeroValue,
        order: p.order,
        after,
        limit,
      },
      [branch],
    )
    for (const r of rows) {
      const last = groups.at(-1)?.[0]
      if (last && sameLog(last, r)) groups.at(-1)?.push(r)
      else groups.push([r])
    }
    exhausted = rows.length < limit
    after = rows.at(-1) ?? after
  }
  // The loop stops only once a further transfer began (so the page's last one is whole) or the
  // rows ran out.
  const shown = groups.slice(0, p.maxCount)
  const metas = await transfers.tokenMetas(net, shown.flat())
  const out: AssetTransfersResult = {
    transfers: shown.map((g) => assetTransfer(net, g, metas, p.withMetadata)),
  }
  const pageEnd = shown.at(-1)?.at(-1)
  if (groups.length > p.maxCount && pageEnd) out.pageKey = encodeCursor(pageEnd)
  return out
}

function sameLog(x: TransferRow, y: TransferRow): boolean {
  return x.source === 1 && y.source === 1 && x.category === 'erc1155' && x.block === y.block && x.a === y.a
}

/** One transfer in Alchemy's shape. */
export function assetTransfer(
  net: Network,
  g: Group,
  metas: Map<Address, TokenMeta>,
  withMetadata: boolean,
): AssetTransfer {
  const r = g[0] as TransferRow
  const meta = r.contract === null ? undefined : metas.get(r.contract)
  const native = r.source === 0
  const decimals = native
    ? net.config.nativeCurrency.decimals
    : r.category === 'erc20'
      ? (meta?.decimals ?? null)
      : null
  const fungible = native || r.category === 'erc20'
  const items = r.category === 'erc1155' ? [...g].sort((x, y) => x.b - y.b) : []
  const out: AssetTransfer = {
    // Alchemy's forms: <hash>:external, <hash>:internal:<n>, <hash>:log:<logIndex>.
    uniqueId: native
      ? r.category === 'external'
        ? `${r.txHash}:external`
        : `${r.txHash}:internal:${r.b}`
      : `${r.txHash}:log:${r.a}`,
    category: r.category,
    blockNum: hex(r.block),
    from: r.from,
    to: r.to,
    value: fungible && decimals !== null ? Number(formatUnits(r.value, decimals)) : null,
    erc721TokenId: r.category === 'erc721' && r.tokenId !== null ? hex32(r.tokenId) : null,
    erc1155Metadata:
      r.category === 'erc1155'
        ? items.map((i) => ({ tokenId: hex32(i.tokenId ?? 0n), value: hex(i.value) }))
        : null,
    tokenId:
      r.category === 'erc721' || (r.category === 'erc1155' && items.length === 1)
        ? hex32(r.tokenId ?? 0n)
        : null,
    asset: native ? net.config.nativeCurrency.symbol : (meta?.symbol ?? null),
    hash: r.txHash,
    rawContract: {
      value: fungible ? hex(r.value) : null,
      address: r.contract,
      decimal: decimals === null ? null : hex(decimals),
    },
  }
  if (withMetadata) out.metadata = { blockTimestamp: new Date(Number(r.timestamp) * 1000).toISOString() }
  return out
}

/**
 * Compute units: Alchemy charges 150 where eth_blockNumber is 10; Halyard's scale has
 * eth_blockNumber at 1 and the REST transfer list at 20 for up to 100 rows. A page of up to 1,000
 * transfers is up to ten such reads: 20 per started 100 of maxCount (20 to 200).
 */
export function assetTransfersCost(params: readonly unknown[]): number {
  const first = params[0]
  const raw =
    typeof first === 'object' && first !== null ? (first as { maxCount?: unknown }).maxCount : undefined
  let n = MAX_COUNT
  if (typeof raw === 'string' && hexQuantity.test(raw)) n = Number(BigInt(raw))
  else if (typeof raw === 'number' && Number.isSafeInteger(raw)) n = raw
  return 20 * Math.min(10, Math.max(1, Math.ceil(n / 100)))
}

export interface AssetTransfersDeps {
  transfers: TransferService
  logger: Logger
}

/**
 * The registry row of `alchemy_getAssetTransfers` for the Alchemy compatibility root: answered
 * by Halyard from its index (never forwarded), scope data:read like the REST transfer API. The
 * answer depends only on the params, so identical in-flight calls may share it.
 */
export function assetTransfersRow(deps: AssetTransfersDeps): MethodSpec {
  // Mapped as the other alchemy_* rows are: a client mistake is -32602, anything else -32603.
  const run = (x: ExecContext, params: readonly unknown[]): Promise<RpcOutcome> =>
    answerJsonRpc({ logger: deps.logger, what: 'alchemy_getAssetTransfers' }, () =>
      getAssetTransfers(deps.transfers, x.network, parseAssetTransfersParams(params)),
    )
  const cost = variableCost('20 CU per started 100 of maxCount (20 to 200)', assetTransfersCost)
  return m('alchemy_getAssetTransfers', cost, { scope: 'data:read', run })
}
