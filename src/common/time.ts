/** Resolves after `ms`, or at once when `signal` aborts (a stopping worker does not wait out its nap). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const t = setTimeout(done, ms)
    signal?.addEventListener('abort', done)
  })
}

/** `p`, or a rejection naming the wait once `ms` pass first. */
export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T>
/** `p`, or `onTimeout()`'s value once `ms` pass first (a rejection of `p` still rejects). */
export function withTimeout<T, F>(p: Promise<T>, ms: number, onTimeout: () => F): Promise<T | F>
export function withTimeout<T, F>(p: Promise<T>, ms: number, onTimeout?: () => F): Promise<T | F> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      if (onTimeout) resolve(onTimeout())
      else reject(new Error(`no answer within ${ms} ms`))
    }, ms)
    p.then(
      (v) => {
        clearTimeout(t)
        resolve(v)
      },
      (e) => {
        clearTimeout(t)
        reject(e)
      },
    )
  })
}
