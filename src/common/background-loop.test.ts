import { describe, expect, it } from 'vitest'
import { createLogger } from '../logger.ts'
import { BackgroundLoop } from './background-loop.ts'
import { withTimeout } from './time.ts'
import { WakeSignal } from './wake-signal.ts'

const logger = createLogger('silent')

/** Resolves once `done()` holds; rejects after 5 s. */
const reached = (done: () => boolean) =>
  withTimeout(
    (async () => {
      while (!done()) await new Promise((r) => setTimeout(r, 2))
    })(),
    5_000,
  )

describe('BackgroundLoop', () => {
  it('stop() waits for the round in progress, and no round starts after it', async () => {
    let rounds = 0
    let release: () => void = () => {}
    const loop = new BackgroundLoop({
      failure: 'test round failed',
      logger,
      retryMs: () => 1,
      round: async () => {
        rounds++
        await new Promise<void>((r) => {
          release = r
        })
        return 0
      },
    })
    loop.start()
    await new Promise((r) => setTimeout(r, 5))
    let stopped = false
    const stopping = loop.stop().then(() => {
      stopped = true
    })
    await new Promise((r) => setTimeout(r, 5))
    expect(stopped).toBe(false)
    release()
    await stopping
    expect(rounds).toBe(1)
    expect(loop.active).toBe(false)
  })

  it('a failing round is retried after its backoff; the loop keeps going', async () => {
    const seen: number[] = []
    let n = 0
    const loop = new BackgroundLoop({
      failure: 'test round failed',
      logger,
      retryMs: (failures) => {
        seen.push(failures)
        return 1
      },
      round: async () => {
        n++
        if (n <= 3) throw new Error('boom')
        return 60_000
      },
    })
    loop.start()
    await reached(() => n >= 4)
    await loop.stop()
    expect(seen).toEqual([1, 2, 3])
    expect(n).toBe(4)
  })

  it('wake() ends the pause at once; a wake during a round skips the next pause', async () => {
    let n = 0
    const loop = new BackgroundLoop({
      failure: 'test round failed',
      logger,
      retryMs: () => 60_000,
      round: async () => {
        n++
        if (n === 2) loop.wake()
        return 60_000
      },
    })
    loop.start()
    await new Promise((r) => setTimeout(r, 5))
    expect(n).toBe(1)
    loop.wake()
    await reached(() => n >= 3)
    await loop.stop()
    expect(n).toBe(3)
  })
})

describe('WakeSignal', () => {
  it('answers the wake reason, a timeout, or stop', async () => {
    const stop = new AbortController()
    const signal = new WakeSignal<'push'>(stop.signal)
    expect(await signal.sleep(1)).toBe('timeout')
    const woken = signal.sleep(60_000)
    signal.wake('push')
    expect(await woken).toBe('push')
    // Kept for the next pause when nobody sleeps, then consumed.
    signal.wake('push')
    expect(await signal.sleep(60_000)).toBe('push')
    const stopped = signal.sleep(60_000)
    stop.abort()
    expect(await stopped).toBe('stop')
  })
})

describe('withTimeout', () => {
  it('rejects after the wait, or answers the fallback', async () => {
    const never = new Promise<number>(() => {})
    await expect(withTimeout(never, 5)).rejects.toThrow('no answer within 5 ms')
    expect(await withTimeout(never, 5, () => undefined)).toBeUndefined()
    expect(await withTimeout(Promise.resolve(7), 1_000)).toBe(7)
  })
})
