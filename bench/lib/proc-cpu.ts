/**
 * CPU time of a process and its descendants (Linux /proc), for "CPU per request" columns:
 * on a shared, noisy machine req/s moves with the neighbours' load, while the CPU a server
 * spends per request moves much less. Elsewhere (no /proc) it reports undefined.
 */
import { readdirSync, readFileSync } from 'node:fs'

/** /proc's utime and stime are in USER_HZ ticks, 100 a second on every Linux ABI. */
const TICK_US = 10_000

function stat(pid: string): { ppid: number; ticks: number; kernelTicks: number } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after "pid (comm) ": state ppid … utime is field 14, stime 15 (1-based).
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ')
    return { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]), kernelTicks: Number(f[12]) }
  } catch {
    return undefined // exited meanwhile
  }
}

/** CPU microseconds used so far by `root` and every process below it (threads included). */
export function treeCpuUs(root: number | undefined): number | undefined {
  if (root === undefined) return undefined
  let pids: string[]
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p))
  } catch {
    return undefined
  }
  const children = new Map<number, number[]>()
  const ticks = new Map<number, number>()
  for (const p of pids) {
    const st = stat(p)
    if (!st) continue
    ticks.set(Number(p), st.ticks)
    const list = children.get(st.ppid)
    if (list) list.push(Number(p))
    else children.set(st.ppid, [Number(p)])
  }
  if (!ticks.has(root)) return undefined
  let total = 0
  const stack = [root]
  while (stack.length > 0) {
    const pid = stack.pop()!
    total += ticks.get(pid) ?? 0
    stack.push(...(children.get(pid) ?? []))
  }
  return total * TICK_US
}

/** CPU microseconds used so far by `pid`'s main thread alone (its other threads: V8's helpers). */
export function mainThreadCpuUs(pid: number | undefined): number | undefined {
  return mainThread(pid)?.ticks
}

/** The part of `mainThreadCpuUs` spent in the kernel (system calls: socket reads and writes, epoll). */
export function mainThreadKernelUs(pid: number | undefined): number | undefined {
  return mainThread(pid)?.kernelTicks
}

function mainThread(pid: number | undefined): { ticks: number; kernelTicks: number } | undefined {
  if (pid === undefined) return undefined
  // The main thread's task has the process's id.
  const st = stat(`${pid}/task/${pid}`)
  return st === undefined ? undefined : { ticks: st.ticks * TICK_US, kernelTicks: st.kernelTicks * TICK_US }
}
