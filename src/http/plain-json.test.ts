import Fastify, { type FastifyRequest } from 'fastify'
import { describe, expect, it } from 'vitest'
import { NOT_PLAIN, plainJson } from './plain-json.ts'

/** Fastify's own parser, as Halyard configures it (src/server/app.ts): both kinds of key refused. */
const secureJson = Fastify().getDefaultJsonParser('error', 'error')
function secure(text: string): unknown {
  let outcome: { err: Error | null; value?: unknown } = { err: null }
  secureJson(undefined as unknown as FastifyRequest, text, (err, value) => {
    outcome = { err, value }
  })
  if (outcome.err) throw outcome.err
  return outcome.value
}

describe('plainJson', () => {
  it('parses ordinary bodies as the secure parser does', () => {
    for (const text of [
      '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xab","latest"]}',
      '[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"},{"jsonrpc":"2.0","id":"x","method":"net_version","params":[]}]',
      '{"a":{"b":[1,2.5,-3e7,null,true,false,"s"]},"proto":"__prot__o"}',
      '123456789012345678901234567890',
      '"a string"',
      'null',
    ]) {
      expect(plainJson(text), text).toEqual(secure(text))
    }
  })

  it('leaves to the secure parser every body that may hold __proto__ or constructor keys', () => {
    for (const text of [
      '{"__proto__":{"admin":true}}',
      '{"a":{"constructor":{"prototype":{"x":1}}}}',
      '{"\\u005f_proto__":{"admin":true}}',
      '{"\\u0063onstructor":{"prototype":{}}}',
      '{"note":"\\u00e9t\\u00e9"}',
      '{"note":"the constructor of the contract"}',
    ]) {
      expect(plainJson(text), text).toBe(NOT_PLAIN)
    }
    // …where the hostile ones are refused and the harmless ones parsed.
    expect(() => secure('{"__proto__":{"admin":true}}')).toThrow()
    expect(() => secure('{"\\u005f_proto__":{"admin":true}}')).toThrow()
    expect(secure('{"note":"\\u00e9t\\u00e9"}')).toEqual({ note: 'été' })
  })

  it('leaves bodies JSON.parse refuses to the secure parser, for its own error', () => {
    for (const text of ['', '{', '{"a":1,}', '\uFEFF{"a":1}', 'undefined', '{"a":1}x']) {
      expect(plainJson(text), JSON.stringify(text)).toBe(NOT_PLAIN)
    }
    // A byte-order mark is one the secure parser strips.
    expect(secure('\uFEFF{"a":1}')).toEqual({ a: 1 })
  })
})
