import { pad, toHex } from 'viem'
import { afterEach, describe, expect, it } from 'vitest'
import { openTestPGlite } from '../../../test/helpers/storage.ts'
import type { Storage } from '../../storage/database.ts'
import type { Hash } from '../../types.ts'
import { readCursor } from '../store.ts'
import { importBulk } from './import.ts'
import type { BulkBlock, BulkSource } from './source.ts'

/**
 * The importer writes one batch while it reads the next: a source that fails while a batch is
 * being written leaves the index at the last committed batch, the failure reaches the caller,
 * and a later import continues from there.
 */
const hashOf = (n: number): Hash => pad(toHex(n + 1), { size: 32 }) as Hash

function block(n: number, parent: Hash = n === 0 ? hashOf(-1) : hashOf(n - 1)): BulkBlock {
  return {
    header: {
      number: BigInt(n),
      hash: hashOf(n),
      parentHash: parent,
      timestamp: 1_700_000_000 + n,
      transactions: [],
    },
    logs: [],
    internal: [],
  }
}

/** Blocks 0..last; the block at `broken` (when given) names a parent that is not its predecessor. */
function source(last: number, broken?: number): BulkSource {
  return {
    range: () => ({ from: 0n, to: BigInt(last) }),
    async *blocks(from, to) {
      for (let n = Number(from); n <= Number(to); n++)
        yield n === broken ? block(n, pad('0xdead', { size: 32 }) as Hash) : block(n)
    },
  }
}

describe('bulk import pipeline', () => {
  let storage: Storage | undefined
  afterEach(async () => {
    await storage?.close()
    storage = undefined
  })

  it('stops at the last committed batch when the source fails mid-way, and resumes from it', async () => {
    storage = await openTestPGlite()
    const net = { slug: 'ethereum-devnet', chainId: 31337 }
    await expect(
      importBulk({ storage, network: net, source: source(20, 13), batchBlocks: 4 }),
    ).rejects.toThrow(/block 13 does not follow the previous block/)
    // Batches 0–3, 4–7 and 8–11 were complete before block 13 was read; 12 was still gathering.
    expect((await readCursor(storage.db, net.slug))?.number).toBe(11n)
    const rest = await importBulk({ storage, network: net, source: source(20), batchBlocks: 4 })
    expect(rest).toMatchObject({ from: 12n, to: 20n, blocks: 9 })
    expect((await readCursor(storage.db, net.slug))?.number).toBe(20n)
  })
})
