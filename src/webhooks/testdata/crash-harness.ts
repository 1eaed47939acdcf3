import { type ChildProcess, spawn } from 'node:child_process'
import path from 'node:path'
import { encodeAbiParameters, keccak256 } from 'viem'
import type { Address, Hex } from '../../types.ts'
import type { Receiver } from './receiver.ts'

/** What the webhook crash tests share: a Halyard child process (crash-worker.ts) and the spray's holders. */
const WORKER = path.join(import.meta.dirname, 'crash-worker.ts')

export type CrashWorker = ReturnType<typeof startWorker>

/** Starts crash-worker.ts; `ready()` gives its API base URL and key once it prints them. */
export function startWorker(env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', WORKER], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let ready: { baseUrl: string; key: string } | undefined
  let buf = ''
  child.stdout?.on('data', (d: Buffer) => {
    buf += d.toString()
    const m = /ready (\S+) (\S+)/.exec(buf)
    if (m) ready = { baseUrl: m[1] as string, key: m[2] as string }
  })
  child.stderr?.on('data', (d: Buffer) => process.stderr.write(d))
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  return { child, ready: () => ready, exited }
}

/** The addresses DemoERC20.spray(seed, count, …) mints to. */
export function sprayed(seed: bigint, count: number): Address[] {
  return Array.from({ length: count }, (_, i): Hex => {
    const h = keccak256(encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }], [seed, BigInt(i)]))
    return `0x${h.slice(-40)}`
  })
}

/** Ids of the events the receiver acknowledged (200), each once. */
export function ackedIds(receiver: Receiver): Set<string> {
  return new Set(receiver.received.filter((r) => r.status === 200).map((r) => JSON.parse(r.raw).id as string))
}
