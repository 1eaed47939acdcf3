import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createLogger } from '../logger.ts'
import { Metrics } from '../metrics.ts'
import type { Address, Hash } from '../types.ts'
import { SkippedLogs } from './skipped-logs.ts'

describe('SkippedLogs', () => {
  it('counts every skip but warns once per network per interval, naming block, tx and log index', async () => {
    const lines: string[] = []
    const stream = new Writable({
      write(chunk, _enc, cb) {
        lines.push(chunk.toString())
        cb()
      },
    })
    const metrics = new Metrics({ defaultMetrics: false })
    const skipped = new SkippedLogs(createLogger('info', stream), metrics.indexerLogsSkipped, 60_000)
    const log = (i: number) => ({
      address: '0x00000000000000000000000000000000000000cc' as Address,
      topics: [],
      data: '0x' as const,
      txHash: `0x${i.toString(16).padStart(64, '0')}` as Hash,
      logIndex: i,
    })
    // A flood from one cheap transaction: a thousand malformed logs on one network.
    for (let i = 0; i < 1000; i++)
      skipped.report({
        network: 'ethereum',
        blockNumber: 7n,
        log: log(i),
        event: 'TransferBatch',
        reason: 'r',
      })
    skipped.report({ network: 'base', blockNumber: 9n, log: log(5), event: 'Transfer', reason: 'short' })

    const warnings = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(warnings).toHaveLength(2)
    expect(warnings[0]).toMatchObject({
      msg: 'malformed log skipped',
      network: 'ethereum',
      block: '7',
      tx: `0x${'0'.repeat(64)}`,
      logIndex: 0,
      event: 'TransferBatch',
      reason: 'r',
    })
    expect(warnings[1]).toMatchObject({ network: 'base', block: '9', logIndex: 5, event: 'Transfer' })
    const text = await metrics.registry.metrics()
    expect(text).toContain(
      'halyard_indexer_logs_skipped_total{network="ethereum",event="TransferBatch"} 1000',
    )
    expect(text).toContain('halyard_indexer_logs_skipped_total{network="base",event="Transfer"} 1')
  })
})
