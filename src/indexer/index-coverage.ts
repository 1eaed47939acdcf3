import type { FastifyReply } from 'fastify'
import { z } from 'zod'
import { INDEX_HEADERS } from '../http/index-headers.ts'
import type { ResponseHeader } from '../http/route-meta.ts'
import type { Coverage } from './history.ts'

/** The headers, as the routes that set them declare them (OpenAPI). */
export const INDEX_RESPONSE_HEADERS: Readonly<Record<string, ResponseHeader>> = {
  [INDEX_HEADERS.completeFrom]: {
    description: 'The answer holds everything from this block on (absent before the index started)',
    type: 'integer',
    example: 21000000,
    always: false,
  },
  [INDEX_HEADERS.indexedTo]: {
    description: 'The last block indexed (absent before the first)',
    type: 'integer',
    example: 21345678,
    always: false,
  },
  [INDEX_HEADERS.partial]: {
    description: 'true when blocks below Halyard-Index-Complete-From may hold data this answer lacks',
    type: 'boolean',
    example: false,
    always: true,
  },
  [INDEX_HEADERS.scan]: {
    description: "The address's history scan below the index (docs/data-apis.md)",
    type: 'string',
    example: 'not_needed',
    enum: ['not_needed', 'queued', 'running', 'done', 'refused'],
    always: true,
  },
}

/** The `index` field of an answer (OpenAPI). */
export const indexCoverage = z
  .object({
    complete_from: z
      .number()
      .int()
      .nullable()
      .describe('The answer holds every transfer from this block on; null before the index started')
      .meta({ example: 21000000 }),
    indexed_to: z
      .number()
      .int()
      .nullable()
      .describe('The last block indexed; null before the first')
      .meta({ example: 21345678 }),
    partial: z
      .boolean()
      .describe('Blocks below complete_from may hold data this answer lacks')
      .meta({ example: false }),
    history_scan: z
      .enum(['not_needed', 'queued', 'running', 'done', 'refused'])
      .describe(
        "The address's history scan below the index: refused when the scan queue (or this account's share of it) is full; ask again later",
      ),
  })
  .describe('From which block the answer is complete')

export type IndexCoverage = z.output<typeof indexCoverage>

/**
 * Narrows coverage to an answer that reads only blocks from `fromBlock` on: complete when the
 * index covers them all, whatever lies below.
 */
export function fromBlock(c: Coverage, from: bigint | undefined): Coverage {
  if (from === undefined || c.completeFrom === null || from < c.completeFrom) return c
  return { ...c, partial: false }
}

/** Sets the index headers on `reply` and returns the `index` field. */
export function stateCoverage(reply: FastifyReply, c: Coverage): IndexCoverage {
  if (c.completeFrom !== null) reply.header(INDEX_HEADERS.completeFrom, c.completeFrom.toString())
  if (c.indexedTo !== null) reply.header(INDEX_HEADERS.indexedTo, c.indexedTo.toString())
  reply.header(INDEX_HEADERS.partial, String(c.partial))
  reply.header(INDEX_HEADERS.scan, c.scan)
  return {
    complete_from: c.completeFrom === null ? null : Number(c.completeFrom),
    indexed_to: c.indexedTo === null ? null : Number(c.indexedTo),
    partial: c.partial,
    history_scan: c.scan,
  }
}
