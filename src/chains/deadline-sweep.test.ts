import { describe, expect, it } from 'vitest'
import { DeadlineSweep, type Expiring } from './deadline-sweep.ts'

class Call implements Expiring {
  expired = 0
  readonly deadline: number
  constructor(inMs: number) {
    this.deadline = performance.now() + inMs
  }
  expire(): void {
    this.expired++
  }
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('DeadlineSweep', () => {
  it('expires a call once its deadline has passed, once, and never one that settled first', async () => {
    const sweep = new DeadlineSweep()
    const late = new Call(30)
    const settled = new Call(30)
    const far = new Call(60_000)
    sweep.add(late)
    sweep.add(settled)
    sweep.add(far)
    sweep.delete(settled)
    expect(late.expired).toBe(0)
    while (late.expired === 0) await tick(5)
    await tick(50)
    expect(late.expired).toBe(1)
    expect(settled.expired).toBe(0)
    expect(far.expired).toBe(0)
    sweep.delete(far)
  })

  it('watches again after it went idle', async () => {
    const sweep = new DeadlineSweep()
    const first = new Call(0)
    sweep.add(first)
    while (first.expired === 0) await tick(5)
    // The sweep stopped its timer with nothing in flight; a new call restarts it.
    await tick(30)
    const second = new Call(0)
    sweep.add(second)
    while (second.expired === 0) await tick(5)
    expect(second.expired).toBe(1)
  })
})
