import { describe, expect, it } from 'vitest'
import { RequestBudget } from './request-budget.ts'

describe('RequestBudget', () => {
  it('never has more than maxConcurrency tasks running, and runs them all', async () => {
    const budget = new RequestBudget({ requestsPerSecond: 10_000, maxConcurrency: 3 })
    let running = 0
    let most = 0
    const done = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        budget.run(async () => {
          running++
          most = Math.max(most, running)
          await new Promise((r) => setTimeout(r, 2))
          running--
          return i
        }),
      ),
    )
    expect(done).toEqual(Array.from({ length: 40 }, (_, i) => i))
    expect(most).toBe(3)
  })

  it('starts at most requestsPerSecond tasks in any second', async () => {
    const budget = new RequestBudget({ requestsPerSecond: 5, maxConcurrency: 100 })
    const starts: number[] = []
    await Promise.all(
      Array.from({ length: 12 }, () =>
        budget.run(async () => {
          starts.push(performance.now())
        }),
      ),
    )
    expect(starts).toHaveLength(12)
    // Every sixth start is a second after the first of the five before it. A task reads the clock
    // a few promise reactions after its grant, and the first burst's later tasks wait behind the
    // others' reactions (a CI run measured 999.996 ms): a millisecond of slack for that, far below
    // what a budget that let the sixth through early would show (the whole second).
    for (let i = 5; i < starts.length; i++)
      expect((starts[i] as number) - (starts[i - 5] as number)).toBeGreaterThanOrEqual(999)
  })

  it('keeps going after a task fails', async () => {
    const budget = new RequestBudget({ requestsPerSecond: 100, maxConcurrency: 1 })
    await expect(budget.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom')
    await expect(budget.run(async () => 7)).resolves.toBe(7)
  })

  it('refuses a budget of nothing', () => {
    expect(() => new RequestBudget({ requestsPerSecond: 0, maxConcurrency: 1 })).toThrow()
  })
})
