import type { EventType } from './config.ts'
import { camelData, envelopeB } from './form-b.ts'

/** The `data` of test events (POST /v1/webhooks/{id}/test): zero values of each kind's shape. */

export function sampleTokenTransferB(): Record<string, unknown> {
  const zero = `0x${'0'.repeat(40)}`
  return {
    blockNumber: 0,
    transactionHash: `0x${'0'.repeat(64)}`,
    logIndex: 0,
    from: zero,
    to: zero,
    token: { address: zero, symbol: 'TEST', decimals: 18 },
    value: '0',
    valueFormatted: '0',
  }
}

export function sampleData(type: EventType, chain: string): Record<string, unknown> {
  const zero = `0x${'0'.repeat(40)}`
  const tx = `0x${'0'.repeat(64)}`
  const base = { chain, block_number: 0, tx_hash: tx }
  switch (type) {
    case 'address_activity':
      return {
        ...base,
        from: zero,
        to: zero,
        value: '0',
        asset: 'ETH',
        contract: null,
        direction: 'incoming',
      }
    case 'token_transfer':
      return { ...base, contract: zero, from: zero, to: zero, value: '0', symbol: 'TEST', decimals: 18 }
    case 'nft_transfer':
      return { ...base, contract: zero, from: zero, to: zero, token_id: '0', standard: 'ERC721', quantity: 1 }
    case 'mined_transaction':
      return {
        ...base,
        block_hash: tx,
        transaction_index: 0,
        from: zero,
        to: zero,
        value: '0',
        status: 'success',
        gas_used: '0',
      }
    case 'log':
      return { ...base, block_hash: tx, log_index: 0, address: zero, topics: [], data: '0x' }
    case 'new_block':
      return {
        chain,
        block_number: 0,
        block_hash: tx,
        parent_hash: tx,
        timestamp: 0,
        gas_used: '0',
        transaction_count: 0,
      }
    case 'pending_transaction':
      return {
        chain,
        tx_hash: tx,
        from: zero,
        to: zero,
        value: '0',
        nonce: 0,
        asset: 'ETH',
        direction: 'incoming',
      }
    case 'internal_transfer':
      return { ...base, from: zero, to: zero, value: '0', asset: 'ETH', call_type: 'call', trace_path: '0' }
  }
}

/** The body of a test event (POST /v1/webhooks/{id}/test) in the webhook's delivery form. */
export function testEventBody(
  row: { id: string; event_type: string; chain: string; format: string },
  eventId: string,
  createdAt: string,
  chainId: number,
) {
  const data = sampleData(row.event_type as EventType, row.chain)
  if (row.format === 'B') {
    const dataB = row.event_type === 'token_transfer' ? sampleTokenTransferB() : camelData(data)
    return { ...envelopeB(eventId, row.event_type, createdAt, row.chain, chainId, dataB), test: true }
  }
  return {
    id: eventId,
    event_type: row.event_type,
    webhook_id: row.id,
    created_at: createdAt,
    test: true,
    data,
  }
}
