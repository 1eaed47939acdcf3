import { Writable } from 'node:stream'
import Fastify, { type FastifyBaseLogger } from 'fastify'
import { describe, expect, it } from 'vitest'
import { createLogger } from '../logger.ts'
import { LazyRequestLogger } from './lazy-logger.ts'

function capture() {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l))
      cb()
    },
  })
  return { lines, logger: createLogger('info', stream) }
}

describe('LazyRequestLogger', () => {
  it('logs with the request id binding and redaction, like an eager pino child', async () => {
    const { lines, logger } = capture()
    const app = Fastify({
      loggerInstance: logger as FastifyBaseLogger,
      disableRequestLogging: true,
      childLoggerFactory: (parent, bindings, opts) => new LazyRequestLogger(parent, bindings, opts),
    })
    app.get('/x', async (request) => {
      request.log.warn({ apiKey: { key: 'halyard_test_secret' } }, 'hello')
      return 'ok'
    })
    app.get('/quiet', async () => 'ok')
    const res = await app.inject({ method: 'GET', url: '/x', headers: { 'x-request-id': 'abc' } })
    expect(res.statusCode).toBe(200)
    await app.inject({ method: 'GET', url: '/quiet' })
    await app.close()
    const hello = lines.filter((l) => l.msg === 'hello')
    expect(hello).toHaveLength(1)
    expect(hello[0]?.reqId).toBeTypeOf('string')
    expect(JSON.stringify(hello[0])).not.toContain('halyard_test_secret')
    expect(hello[0]?.level).toBe(40)
  })

  it('reports the parent level without building the child, and builds it for child()', () => {
    const { lines, logger } = capture()
    const lazy = new LazyRequestLogger(logger as FastifyBaseLogger, { reqId: 'r1' }, {})
    expect(lazy.level).toBe('info')
    lazy.child({ extra: 1 }).info('from child')
    expect(lines[0]).toMatchObject({ reqId: 'r1', extra: 1, msg: 'from child' })
  })
})
