/**
 * Polls `fn` until it returns something truthy (which it resolves to), or fails naming `what`
 * after `ms`. Tests wait for outcomes with this, never for a fixed time.
 */
export async function until<T>(
  what: string,
  fn: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  ms = 30_000,
): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}
