/**
 * bench:ws processes seen from the driver: a server child (Halyard, a Halyard cluster or the
 * floor) answering over IPC, and the client processes (ws-clients.ts).
 */
import { type ChildProcess, fork } from 'node:child_process'
import type { ToDriver } from './ws-clients.ts'
import type { FromServer, ToServer } from './ws-floor.ts'

export class ServerChild {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    readonly idleRssMiB: number,
  ) {}

  /** `args`: `--server …` (Halyard), `--cluster …` (ws-cluster.ts) or `--floor …` (ws-floor.ts). */
  static async start(args: string[]): Promise<ServerChild> {
    const extra = (process.env.BENCH_SERVER_ARGS ?? '').split(' ').filter(Boolean)
    const child = fork(process.argv[1]!, args, {
      execArgv: [...extra, '--import', 'tsx'],
      stdio: 'inherit',
    })
    const hello = await new Promise<FromServer>((resolve, reject) => {
      child.once('message', resolve)
      child.once('exit', (code) => reject(new Error(`${args[0]} child exited with ${code} before listening`)))
    })
    if (hello.type !== 'listening') throw new Error(`unexpected first message from the ${args[0]} child`)
    child.removeAllListeners('exit')
    return new ServerChild(child, hello.url, hello.idleRssMiB)
  }

  ask<T extends FromServer['type']>(type: T & ToServer['type']): Promise<Extract<FromServer, { type: T }>> {
    return new Promise((resolve) => {
      const on = (m: FromServer) => {
        if (m.type !== type) return
        this.child.off('message', on)
        resolve(m as Extract<FromServer, { type: T }>)
      }
      this.child.on('message', on)
      this.child.send({ type } satisfies ToServer)
    })
  }

  async stop(): Promise<void> {
    const exited = new Promise((r) => this.child.once('exit', r))
    this.child.send({ type: 'stop' } satisfies ToServer)
    await exited
  }
}

export interface Clients {
  children: ChildProcess[]
  /** Settled when every child has exited (listened to from the fork on: an exit is never missed). */
  exited: Promise<unknown>
  connected: number
  failed: number
}

/** Forks the client processes one after the other (each opens its share of the clients). */
export async function startClients(url: string, count: number, processes: number): Promise<Clients> {
  const out: Clients = { children: [], exited: Promise.resolve(), connected: 0, failed: 0 }
  const exits: Promise<unknown>[] = []
  const procs = Math.min(processes, count)
  for (let i = 0; i < procs; i++) {
    const share = Math.floor(count / procs) + (i < count % procs ? 1 : 0)
    const child = fork(process.argv[1]!, ['--clients', url, String(share)], {
      execArgv: ['--import', 'tsx', '--max-old-space-size=4096'],
      stdio: 'inherit',
    })
    exits.push(new Promise((r) => child.once('exit', r)))
    out.exited = Promise.all(exits)
    const early = (code: number | null) => {
      throw new Error(`client process exited with ${code} before its clients were connected`)
    }
    child.once('exit', early)
    const ready = await new Promise<Extract<ToDriver, { type: 'ready' }>>((resolve) => {
      child.on('message', (m: ToDriver) => {
        if (m.type === 'ready') resolve(m)
      })
    })
    child.off('exit', early)
    out.children.push(child)
    out.connected += ready.connected
    out.failed += ready.failed
  }
  return out
}
