import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { startAnvil } from './anvil.ts'

/** The anvil processes on this machine started with the given chain id (one test's own). */
function anvilsWithChainId(chainId: number): string[] {
  const ps = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
  return ps
    .split('\n')
    .filter(
      (line) => /\banvil\b/.test(line) && line.includes(`--chain-id ${chainId}`) && !line.includes('/bin/sh'),
    )
}

describe('startAnvil', () => {
  it('leaves no anvil behind when its start-up deadline passes', async () => {
    const chainId = 900_000 + Math.floor(Math.random() * 90_000)
    // A deadline no anvil can meet: the guard has spawned anvil, which is still starting.
    await expect(startAnvil({ chainId, startTimeoutMs: 1 })).rejects.toThrow(/did not start within/)
    expect(anvilsWithChainId(chainId)).toEqual([])
  })

  it('stops the anvil it started', async () => {
    const chainId = 900_000 + Math.floor(Math.random() * 90_000)
    const anvil = await startAnvil({ chainId })
    expect(anvilsWithChainId(chainId)).toHaveLength(1)
    await anvil.stop()
    expect(anvilsWithChainId(chainId)).toEqual([])
  })
})
