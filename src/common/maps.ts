/**
 * The inner map of a two-level map, made and stored on first use: label sets and series are
 * kept per outer key (route, upstream) and then per inner key. No callback, so a hot path that
 * looks one up allocates nothing once the inner map exists.
 */
export function innerMap<K, IK, V>(outer: Map<K, Map<IK, V>>, key: K): Map<IK, V> {
  let inner = outer.get(key)
  if (!inner) {
    inner = new Map()
    outer.set(key, inner)
  }
  return inner
}
