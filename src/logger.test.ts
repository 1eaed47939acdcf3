import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createLogger, redactUrl } from './logger.ts'

function capture() {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(chunk.toString())
      cb()
    },
  })
  return { lines, stream }
}

describe('logger redaction', () => {
  it('never writes API keys, bearer tokens or signing secrets', () => {
    const { lines, stream } = capture()
    const log = createLogger('info', stream)
    const key = 'halyard_live_0123456789abcdefghijABCDEFGHIJ01'
    log.info(
      { req: { headers: { 'x-api-key': key, authorization: `Bearer ${key}` }, query: { apiKey: key } } },
      'r',
    )
    log.info(
      { webhook: { id: 'wh_1', signing_secret: 'whsec_topsecret' }, admin: { token: 'adm-token' } },
      'w',
    )
    const out = lines.join('')
    expect(out).not.toContain(key)
    expect(out).not.toContain('whsec_topsecret')
    expect(out).not.toContain('adm-token')
    expect(out).toContain('[redacted]')
    expect(out).toContain('wh_1')
  })
})

describe('redactUrl', () => {
  const key = 'halyard_live_0123456789abcdefghijABCDEFGHIJ01'
  it('redacts a key wherever and however a path spells it', () => {
    for (const path of [
      `/v1/alchemy/eth-mainnet/v2/${key}`,
      `/V2/${key}`,
      `//v1/alchemy/eth-mainnet/v2/${key}/x`,
      `/v1/alchemy/eth-mainnet/NFT/v3/${key}/getNFTs`,
      `/v1/x/${key.toUpperCase()}`,
      `/v1/x/halyard%5Flive%5f0123456789abcdefghijABCDEFGHIJ01`,
      `no route POST /nowhere/${key}?a=1`,
    ]) {
      const out = redactUrl(path)
      expect(out, path).not.toMatch(/0123456789abcdefghij/i)
      expect(out, path).toContain('[redacted]')
    }
    expect(redactUrl('/v1/rpc/ethereum/mainnet')).toBe('/v1/rpc/ethereum/mainnet')
  })
})
