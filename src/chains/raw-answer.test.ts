import { describe, expect, it } from 'vitest'
import { RawResult, rawResultText, valueEnd } from './raw-answer.ts'

const frame = (id: number, result: string, tail = '}') =>
  `{"jsonrpc":"2.0","id":${id},"result":${result}${tail}`

describe('rawResultText: the result of an answer in the common frame, as the node wrote it', () => {
  const values = [
    '"0x1bc16d674ec80000"',
    'null',
    'true',
    '12345',
    '-1.5e3',
    '[]',
    '{}',
    '["0x1",{"a":[1,2,{"b":"}]"}]}]',
    '{"logs":[{"data":"0x","topics":["0xdd"]}],"note":"quote \\" and backslash \\\\"}',
    '"\\\\"',
    '{"s":"\\\\\\"}"}',
    '"ünïcödé ✓"',
  ]
  it.each(values)('finds %s whole', (value) => {
    const text = frame(7, value)
    expect(rawResultText(text, 7)).toBe(value)
    // What the client gets back is the same value the node sent.
    expect(JSON.parse(rawResultText(text, 7) ?? 'undefined')).toEqual(JSON.parse(text).result)
  })

  it('accepts whitespace after the value and after the frame', () => {
    expect(rawResultText(frame(3, '"0x1"', ' }\n'), 3)).toBe('"0x1"')
    expect(rawResultText(frame(3, '{"a":1}', '\n}'), 3)).toBe('{"a":1}')
  })

  it('leaves every other shape to the parser', () => {
    expect(rawResultText(frame(8, '"0x1"'), 7), 'another id').toBeUndefined()
    expect(rawResultText(frame(70, '"0x1"'), 7), 'an id that only starts like ours').toBeUndefined()
    expect(rawResultText('{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"x"}}', 7)).toBeUndefined()
    expect(rawResultText('{"id":7,"jsonrpc":"2.0","result":"0x1"}', 7), 'other key order').toBeUndefined()
    expect(rawResultText(frame(7, '"0x1"', ',"error":null}'), 7), 'a key after the result').toBeUndefined()
    expect(rawResultText(frame(7, '"0x1"', '}x'), 7), 'bytes after the frame').toBeUndefined()
    expect(rawResultText(frame(7, '{"a":[1}', ''), 7), 'unclosed').toBeUndefined()
    expect(rawResultText(frame(7, '"0x1', ''), 7), 'unclosed string').toBeUndefined()
    expect(rawResultText(frame(7, '', '}'), 7), 'no value').toBeUndefined()
    expect(rawResultText('', 7)).toBeUndefined()
  })

  it('valueEnd stops at the end of the value and refuses what does not close', () => {
    expect(valueEnd('{"a":"}"} tail', 0)).toBe(9)
    expect(valueEnd('[[],[]],', 0)).toBe(7)
    expect(valueEnd('"a\\"b",', 0)).toBe(6)
    expect(valueEnd('[', 0)).toBe(-1)
  })
})

describe('RawResult', () => {
  it('is a successful outcome whose result is parsed once, on first read', () => {
    const r = new RawResult('{"n":[1,2]}')
    expect(r.error).toBeUndefined()
    const first = r.result
    expect(first).toEqual({ n: [1, 2] })
    expect(r.result).toBe(first)
    expect(r.json).toBe('{"n":[1,2]}')
  })
})
