import { describe, expect, it } from 'vitest'
import { narrowedRange, rangeHint } from './range-hint.ts'

const span = (blocks: bigint) => ({ kind: 'span', blocks })

describe('rangeHint', () => {
  it.each([
    [
      'Alchemy',
      'Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range and no limit on the response size, or you can request any block range with a cap of 10K logs in the response. Based on your parameters, this block range should work: [0x0, 0x4e1]',
      { kind: 'range', from: 0n, to: 0x4e1n },
    ],
    [
      'Infura',
      'query returned more than 10000 results. Try with this block range [0x0, 0x1F3].',
      { kind: 'range', from: 0n, to: 0x1f3n },
    ],
    [
      'QuickNode (named range)',
      'query returned more than 10000 results. Try with this block range [0x0, 0x63].',
      { kind: 'range', from: 0n, to: 0x63n },
    ],
    ['QuickNode', 'eth_getLogs is limited to a 10,000 range', span(10_000n)],
    ['BlastAPI', 'eth_getLogs is limited to a 5,000 range', span(5000n)],
    [
      'BlastAPI (plan)',
      'Requested range exceeds the range allowed for your plan (50000 > 10000).',
      span(10_000n),
    ],
    ['BlockPI', 'eth_getLogs is limited to 1024 block range', span(1024n)],
    ['geth-style', 'exceed maximum block range: 5000', span(5000n)],
    ['Llamarpc', 'query exceeds max block range 100000', span(100_000n)],
    ['range too large, max', 'block range too large, max 2000', span(2000n)],
    ['Avalanche', 'requested too many blocks from 0 to 16383, maximum is set to 2048', span(2048n)],
    ['Coinbase', 'please limit the query to at most 1000 blocks', span(1000n)],
    ['dRPC', 'ranges over 10000 blocks are not supported on freetier', span(10_000n)],
    ['Sei', 'block range too large (2001), maximum allowed is 2000', span(2000n)],
    ['Cloudflare', 'Max range: 800', span(800n)],
    ['PublicNode', 'maximum block range: 50000', span(50_000n)],
    ['Ankr (distance)', 'maximum [from, to] blocks distance: 1000', span(1000n)],
    ['Moonbeam', 'block range is too wide (maximum 1024)', span(1024n)],
    ['thirdweb', 'Maximum allowed number of requested blocks is 1000', span(1000n)],
    ['Aurora', 'you can make eth_getLogs requests with up to a 2000 block range', span(2000n)],
    ['Merkle', 'eth_getLogs range is too large, max is 10k blocks', span(10_000n)],
    ['Base', 'block range too large', span(2000n)],
    [
      'eRPC',
      'upstream request range exceeded max allowed range {"upstreamId":"a","requestRange":5000,"maxAllowedRange":1000}',
      span(1000n),
    ],
  ])('%s', (_name, message, want) => {
    expect(rangeHint(message, 0n, 0xffffn)).toEqual(want)
  })

  it.each([
    ['Ankr (no number)', 'block range is too wide'],
    ['dRPC (no number)', 'Block range is too large'],
    ['Llamarpc results', 'query exceeds max results 20000, retry with the range 1-2'],
    ['a timeout', 'request timed out'],
    ['empty', ''],
  ])('names nothing: %s', (_name, message) => {
    expect(rangeHint(message, 0n, 100n)).toBeUndefined()
  })

  it('a named range for another start gives its width', () => {
    expect(rangeHint('Try with this block range [0x10, 0x1f]', 0n, 1000n)).toEqual(span(16n))
  })
})

describe('narrowedRange', () => {
  it('takes the named range for our start', () => {
    expect(narrowedRange('Try with this block range [0x64, 0x6d].', 100n, 300n)).toEqual({
      from: 100n,
      to: 109n,
      named: true,
    })
  })

  it('takes a named span from our start', () => {
    expect(narrowedRange('exceed maximum block range: 10', 100n, 300n)).toEqual({
      from: 100n,
      to: 109n,
      named: true,
    })
  })

  it('halves when nothing is named, or the named width is no narrower', () => {
    expect(narrowedRange('timeout', 100n, 199n)).toEqual({ from: 100n, to: 149n, named: false })
    expect(narrowedRange('exceed maximum block range: 500', 100n, 199n)).toEqual({
      from: 100n,
      to: 149n,
      named: false,
    })
  })

  it('has nothing narrower than one block', () => {
    expect(narrowedRange('exceed maximum block range: 1', 5n, 5n)).toBeNull()
  })
})
