import type { Hex } from '../../src/types.ts'

/**
 * Test-only: hand-assembled EVM bytecode for hostile contracts, without solc — a contract can
 * return or emit anything, and these let a test say exactly what.
 */

const hex = (n: number, bytes: number) => n.toString(16).padStart(bytes * 2, '0')
const word = (t: Hex) => t.slice(2).padStart(64, '0')

/**
 * Creation code whose constructor emits one log with any topics and data, then deploys no code.
 * `head` is copied into memory from the end of the initcode; the log spans `size` bytes from
 * memory offset 0 (default: just the head), so bytes past the head are zeros — megabytes of log
 * data (a 100,000-element array of zeros) from an initcode of a few bytes.
 *
 *   PUSH2 len(head) PUSH2 headOffset PUSH1 0 CODECOPY      memory[0..] = head
 *   PUSH32 topicN-1 … PUSH32 topic0 PUSH4 size PUSH1 0 LOGn
 *   STOP
 *   head
 */
export function logEmitterInitcode(topics: readonly Hex[], head: Hex, size?: number): Hex {
  if (topics.length > 4) throw new Error('LOG takes at most 4 topics')
  const headHex = head.slice(2)
  if (headHex.length % 2 !== 0) throw new Error('head must be whole bytes')
  const headLen = headHex.length / 2
  const logSize = size ?? headLen
  if (logSize < headLen || logSize > 0xffff_ffff || headLen > 0xffff) throw new Error('bad sizes')
  // 3 + 3 + 2 + 1 (CODECOPY) + 33 per topic + 5 (PUSH4) + 2 (PUSH1) + 1 (LOG) + 1 (STOP).
  const headOffset = 18 + 33 * topics.length
  let code = `61${hex(headLen, 2)}61${hex(headOffset, 2)}600039`
  for (const t of [...topics].reverse()) code += `7f${word(t)}`
  code += `63${hex(logSize, 4)}6000${hex(0xa0 + topics.length, 1)}00`
  if (code.length / 2 !== headOffset) throw new Error('log emitter layout is off')
  return `0x${code}${headHex}` as Hex
}

/** What a hostile contract does for a call: return these bytes, revert, or burn all its gas. */
export type Behaviour = Hex | 'revert' | 'burn'

/**
 * Creation code of a contract that dispatches on the 4-byte selector: `cases[selector]` for the
 * listed ones, `fallback` for every other call (including calls without a selector).
 */
export function hostileContractInitcode(cases: Record<string, Behaviour>, fallback: Behaviour): Hex {
  const entries = Object.entries(cases)
  // Selector read (6 bytes) + one 11-byte compare-and-jump per case; each action is 13 or 5 bytes.
  const size = (b: Behaviour) => (b === 'revert' || b === 'burn' ? 5 : 13)
  const blobs: string[] = []
  let pos = 6 + 11 * entries.length
  const fallbackAt = pos
  pos += size(fallback)
  const caseAt = entries.map(([, b]) => {
    const at = pos
    pos += 1 + size(b) // JUMPDEST + action
    return at
  })
  let blobAt = pos
  const action = (b: Behaviour, at: number): string => {
    if (b === 'revert') return '60006000fd'
    if (b === 'burn') return `5b61${hex(at, 2)}56` // JUMPDEST PUSH2 at JUMP: loops until out of gas
    const blob = b.slice(2)
    const code = `61${hex(blob.length / 2, 2)}8061${hex(blobAt, 2)}6000396000f3`
    blobs.push(blob)
    blobAt += blob.length / 2
    return code
  }
  let runtime = '600035' + '60e01c'
  entries.forEach(([selector], i) => {
    runtime += `8063${selector.replace(/^0x/, '').padStart(8, '0')}1461${hex(caseAt[i] as number, 2)}57`
  })
  runtime += action(fallback, fallbackAt)
  entries.forEach(([, b], i) => {
    runtime += `5b${action(b, (caseAt[i] as number) + 1)}`
  })
  runtime += blobs.join('')
  return deployCode(`0x${runtime}` as Hex)
}

/** Creation code that deploys `runtime` as the contract's code. */
export function deployCode(runtime: Hex): Hex {
  const body = runtime.slice(2)
  return `0x61${hex(body.length / 2, 2)}8061000d6000396000f3${body}` as Hex
}
