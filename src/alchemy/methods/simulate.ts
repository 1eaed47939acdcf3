import { decodeAbiParameters } from 'viem'
import { z } from 'zod'
import { nodeError, readUnchecked } from '../../chains/reads.ts'
import type { Network } from '../../chains/registry.ts'
import { formatUnits } from '../../common/decimal.ts'
import { answerJsonRpc } from '../../http/jsonrpc-errors.ts'
import { RPC_METHOD_NOT_FOUND, RpcError } from '../../jsonrpc.ts'
import type { Logger } from '../../logger.ts'
import type { NetworkDataSources } from '../../prices/registry.ts'
import { paramsTuple, parseParams } from '../../rpc/methods/params.ts'
import { m } from '../../rpc/methods/row.ts'
import type { MethodSpec } from '../../rpc/methods/spec.ts'
import { NATIVE_NAMES, type TokenService } from '../../tokens/service.ts'
import { type Address, type Hex, isAddress, toLowerAddress } from '../../types.ts'

/**
 * `alchemy_simulateAssetChanges [tx, block?]`: the transaction run by the upstream's
 * `debug_traceCall` with the call tracer and its logs (geth, reth, anvil), nothing sent. Native
 * value from call frames that did not revert, ERC-20/721 transfers and approvals and ERC-1155
 * transfers from their logs, in execution order, in Alchemy's shape. `ApprovalForAll` and
 * pre-standard NFTs (CryptoPunks) are not reported.
 */

const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'
const APPROVAL = '0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925'
const TRANSFER_SINGLE = '0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62'
const TRANSFER_BATCH = '0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb'

/** As the token API names the native currency (src/tokens/service.ts). */
const hex = z.string().regex(/^0x[0-9a-fA-F]*$/, 'must be 0x-prefixed hex')
const quantity = z.string().regex(/^0x[0-9a-fA-F]{1,64}$/, 'must be a hex quantity')
const addressField = z.string().refine(isAddress, 'must be a 0x-prefixed 20-byte hex address')
const block = z
  .string()
  .regex(
    /^(0x[0-9a-fA-F]{1,64}|latest|pending|safe|finalized|earliest)$/,
    'must be a block number, hash or tag',
  )

const simulateParams = paramsTuple(
  [
    z
      .object({
        from: addressField.optional(),
        to: addressField.optional(),
        value: quantity.optional(),
        data: hex.max(262_146, 'at most 128 KiB of data').optional(),
        gas: quantity.optional(),
        gasPrice: quantity.optional(),
        maxFeePerGas: quantity.optional(),
        maxPriorityFeePerGas: quantity.optional(),
      })
      .strict(),
    block.optional(),
  ],
  '[{from, to, value, data, gas…}, blockIdentifier?]',
)

interface Frame {
  type?: string
  from?: string
  to?: string
  value?: string
  gasUsed?: string
  error?: string
  revertReason?: string
  calls?: Frame[]
  logs?: { address?: string; topics?: string[]; data?: string }[]
}

type AssetType = 'NATIVE' | 'ERC20' | 'ERC721' | 'ERC1155'

interface RawChange {
  assetType: AssetType
  changeType: 'TRANSFER' | 'APPROVE'
  from: Address
  to: Address
  rawAmount?: bigint
  contractAddress?: Address
  tokenId?: bigint
}

const topicAddress = (t: string | undefined): Address | null =>
  t && /^0x[0-9a-fA-F]{64}$/.test(t) ? toLowerAddress(`0x${t.slice(26)}`) : null
const word = (data: string, i: number): bigint | null => {
  const w = data.slice(2 + i * 64, 2 + (i + 1) * 64)
  return w.length === 64 ? BigInt(`0x${w}`) : null
}

/** The changes of one log, or none when it is not one of the events above. */
function logChanges(log: NonNullable<Frame['logs']>[number]): RawChange[] {
  const t = log.topics ?? []
  const data = typeof log.data === 'string' && /^0x[0-9a-fA-F]*$/.test(log.data) ? log.data : '0x'
  if (!isAddress(log.address)) return []
  const contractAddress = toLowerAddress(log.address)
  const [a, b, c] = [topicAddress(t[1]), topicAddress(t[2]), topicAddress(t[3])]
  if ((t[0] === TRANSFER || t[0] === APPROVAL) && a && b) {
    const changeType = t[0] === TRANSFER ? 'TRANSFER' : 'APPROVE'
    if (t.length === 3) {
      const amount = word(data, 0)
      return amount === null
        ? []
        : [{ assetType: 'ERC20', changeType, from: a, to: b, rawAmount: amount, contractAddress }]
    }
    // `c` is non-null only for a well-formed 32-byte topic: BigInt of anything else would throw.
    if (t.length === 4 && c)
      return [
        { assetType: 'ERC721', changeType, from: a, to: b, contractAddress, tokenId: BigInt(t[3] as string) },
      ]
    return []
  }
  if (t[0] === TRANSFER_SINGLE && b && c) {
    const [id, value] = [word(data, 0), word(data, 1)]
    if (id === null || value === null) return []
    return [
      {
        assetType: 'ERC1155',
        changeType: 'TRANSFER',
        from: b,
        to: c,
        contractAddress,
        tokenId: id,
        rawAmount: value,
      },
    ]
  }
  if (t[0] === TRANSFER_BATCH && b && c) {
    try {
      const [ids, values] = decodeAbiParameters([{ type: 'uint256[]' }, { type: 'uint256[]' }], data as Hex)
      return ids.map((id, i) => ({
        assetType: 'ERC1155' as const,
        changeType: 'TRANSFER' as const,
        from: b,
        to: c,
        contractAddress,
        tokenId: id,
        rawAmount: values[i] ?? 0n,
      }))
    } catch {
      return []
    }
  }
  return []
}

/** Depth-first in execution order; a frame that reverted takes its whole subtree with it. */
function collect(frame: Frame, out: RawChange[]): void {
  if (frame.error) return
  const value =
    typeof frame.value === 'string' && /^0x[0-9a-fA-F]+$/.test(frame.value) ? BigInt(frame.value) : 0n
  if (value > 0n && isAddress(frame.from) && isAddress(frame.to) && frame.type !== 'DELEGATECALL')
    out.push({
      assetType: 'NATIVE',
      changeType: 'TRANSFER',
      from: toLowerAddress(frame.from),
      to: toLowerAddress(frame.to),
      rawAmount: value,
    })
  // The call tracer lists a frame's logs apart from its sub-calls: logs first is an approximation
  // of the order within one frame, exact across frames.
  for (const log of frame.logs ?? []) out.push(...logChanges(log))
  for (const sub of frame.calls ?? []) collect(sub, out)
}

export interface SimulateDeps {
  tokens: TokenService
  sources: (net: Network) => NetworkDataSources
  logger: Logger
}

export function simulateRows(deps: SimulateDeps): MethodSpec[] {
  const simulate = async (net: Network, params: readonly unknown[]) => {
    const [tx, at] = parseParams(simulateParams, params)
    let result: unknown
    try {
      // The call tracer's frames are read by `collect` below, field by field.
      result = await readUnchecked(net, 'debug_traceCall', [
        tx,
        at ?? 'latest',
        { tracer: 'callTracer', tracerConfig: { withLog: true } },
      ])
    } catch (err) {
      const refused = nodeError(err)
      if (refused && (refused.code === -32601 || /not (found|supported|available)/i.test(refused.message)))
        throw new RpcError(
          RPC_METHOD_NOT_FOUND,
          `alchemy_simulateAssetChanges needs debug_traceCall with the call tracer, which the upstream of ${net.slug} does not answer`,
        )
      throw err
    }
    const root = (result ?? {}) as Frame
    const gasUsed = typeof root.gasUsed === 'string' ? root.gasUsed : undefined
    if (root.error)
      return {
        changes: [],
        gasUsed,
        error: { message: root.revertReason ? `${root.error}: ${root.revertReason}` : root.error },
      }
    const raw: RawChange[] = []
    collect(root, raw)
    const contracts = [...new Set(raw.flatMap((c) => (c.contractAddress ? [c.contractAddress] : [])))]
    const metas = await deps.tokens.metas(net, contracts)
    const lists = deps.sources(net).tokenLists
    const native = net.config.nativeCurrency
    const changes = raw.map((c) => {
      const meta = c.contractAddress ? metas.get(c.contractAddress) : undefined
      const decimals =
        c.assetType === 'NATIVE'
          ? native.decimals
          : c.assetType === 'ERC20'
            ? (meta?.decimals ?? undefined)
            : 0
      const logo =
        c.contractAddress && net.chainId !== undefined
          ? lists.get(net.chainId, c.contractAddress)?.logoURI
          : undefined
      return {
        assetType: c.assetType,
        changeType: c.changeType,
        from: c.from,
        to: c.to,
        rawAmount: c.rawAmount?.toString() ?? null,
        amount:
          c.rawAmount === undefined
            ? null
            : decimals === undefined
              ? null
              : formatUnits(c.rawAmount, decimals),
        name:
          c.assetType === 'NATIVE' ? (NATIVE_NAMES[native.symbol] ?? native.symbol) : (meta?.name ?? null),
        symbol: c.assetType === 'NATIVE' ? native.symbol : (meta?.symbol ?? null),
        decimals: decimals ?? null,
        contractAddress: c.contractAddress ?? null,
        logo: logo ?? null,
        tokenId: c.tokenId === undefined ? null : `0x${c.tokenId.toString(16)}`,
      }
    })
    return { changes, gasUsed, error: null }
  }
  return [
    // One debug_traceCall (a full EVM execution, traced) plus cached token metadata.
    m('alchemy_simulateAssetChanges', 40, {
      coalesce: false,
      params: simulateParams,
      run: (x, p) =>
        answerJsonRpc({ logger: deps.logger, what: 'alchemy_simulateAssetChanges' }, () =>
          simulate(x.network, p),
        ),
    }),
  ]
}
