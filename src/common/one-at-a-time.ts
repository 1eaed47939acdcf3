/**
 * Runs `work` one call at a time: a call made while one runs waits for it, then runs its own turn
 * (so a flush asked for during a flush still writes what arrived meanwhile).
 */
export function oneAtATime(work: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined
  return async () => {
    while (running) await running
    running = work().finally(() => {
      running = undefined
    })
    await running
  }
}
