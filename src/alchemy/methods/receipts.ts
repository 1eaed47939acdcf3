import { z } from 'zod'
import { readUnchecked } from '../../chains/reads.ts'
import { answerJsonRpc } from '../../http/jsonrpc-errors.ts'
import type { Logger } from '../../logger.ts'
import { paramsTuple, parseParams } from '../../rpc/methods/params.ts'
import { m } from '../../rpc/methods/row.ts'
import type { MethodSpec } from '../../rpc/methods/spec.ts'

/**
 * `alchemy_getTransactionReceipts [{blockNumber | blockHash}]` → `{receipts}`: the block's
 * receipts in one `eth_getBlockReceipts` through the network's upstream pool (standard on
 * geth, reth, erigon, nethermind and anvil), so no per-transaction fan-out.
 */

const blockNumber = z
  .string()
  .regex(
    /^(0x[0-9a-fA-F]{1,16}|latest|earliest|pending|safe|finalized)$/,
    'must be a hex block number or a block tag',
  )
const blockHash = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 0x-prefixed 32-byte hash')

const receiptsParams = paramsTuple(
  [
    z
      .object({ blockNumber: blockNumber.optional(), blockHash: blockHash.optional() })
      .strict()
      .refine(
        (o) => (o.blockNumber === undefined) !== (o.blockHash === undefined),
        'must carry exactly one of blockNumber and blockHash',
      ),
  ],
  '[{blockNumber} | {blockHash}]',
)

export function receiptRows(logger: Logger): MethodSpec[] {
  return [
    // eth_getBlockReceipts' own weight (50 CU): the same upstream work.
    m('alchemy_getTransactionReceipts', 50, {
      params: receiptsParams,
      run: (x, params) =>
        answerJsonRpc({ logger: logger, what: 'alchemy_getTransactionReceipts' }, async () => {
          const [q] = parseParams(receiptsParams, params)
          const block = q.blockHash ?? q.blockNumber
          // The node's receipts go back to the client as it sent them: no reshaping.
          const receipts = await readUnchecked(x.network, 'eth_getBlockReceipts', [block])
          return { receipts: receipts ?? null }
        }),
    }),
  ]
}
