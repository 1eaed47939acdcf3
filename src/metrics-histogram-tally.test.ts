import { Histogram, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { HistogramTally } from './metrics-histogram-tally.ts'

/** A scrape's lines in order (series come out in the order each side first saw them). */
const lines = async (r: Registry) => (await r.metrics()).split('\n').sort()

/** The same observations into a prom-client histogram directly and through a tally. */
function pair() {
  const make = (registry: Registry, tally?: { t?: HistogramTally<'route'> }) =>
    new Histogram({
      name: 'h_seconds',
      help: 'h',
      labelNames: ['route'] as const,
      buckets: [0.001, 0.01, 0.1, 1],
      registers: [registry],
      ...(tally ? { collect: () => tally.t?.flush() } : {}),
    })
  const direct = new Registry()
  const tallied = new Registry()
  const holder: { t?: HistogramTally<'route'> } = {}
  const d = make(direct)
  const t = make(tallied, holder)
  holder.t = new HistogramTally(t)
  return { d, t, tally: holder.t, direct, tallied }
}

describe('HistogramTally', () => {
  it('scrapes exactly as prom-client observing each value would', async () => {
    const { d, tally, direct, tallied } = pair()
    const a = tally.slot({ route: '/a' })
    const b = tally.slot({ route: '/b' })
    const values = [0, 0.0005, 0.001, 0.0011, 0.05, 0.1, 0.5, 1, 3, 1e9]
    for (const [i, v] of values.entries()) {
      d.observe({ route: i % 3 ? '/a' : '/b' }, v)
      ;(i % 3 ? a : b).observe(v)
    }
    expect(await lines(tallied)).toEqual(await lines(direct))
    // A second round adds to the first; a series with nothing new is left as it was.
    for (const v of values) {
      d.observe({ route: '/a' }, v)
      a.observe(v)
    }
    expect(await lines(tallied)).toEqual(await lines(direct))
    expect(await tallied.metrics()).toContain('h_seconds_count{route="/a"} 16')
  })

  it('starts again after the histogram is reset', async () => {
    const { t, tally, tallied } = pair()
    const a = tally.slot({ route: '/a' })
    a.observe(0.5)
    await tallied.metrics()
    t.reset()
    a.observe(0.002)
    const text = await tallied.metrics()
    expect(text).toContain('h_seconds_count{route="/a"} 1')
    expect(text).toContain('h_seconds_bucket{le="0.01",route="/a"} 1')
  })
})
