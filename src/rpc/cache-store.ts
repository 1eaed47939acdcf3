import type { Redis } from 'ioredis'

/**
 * Where cached JSON-RPC results live: the result's JSON text under a key. Values are only
 * ever results that can no longer change, so entries never need invalidation; the memory
 * store evicts the least recently used entries to stay within its byte budget.
 */
export interface ResultCache {
  /** Synchronous first level: the hot path answers a hit without awaiting anything. */
  getLocal(key: string): string | undefined
  /** Second level (Redis) when configured; resolves undefined when absent or unavailable. */
  getRemote(key: string): Promise<string | undefined>
  set(key: string, json: string): void
}

/** Entries larger than this are not cached (a huge block would evict everything else). */
const MAX_ENTRY_FRACTION = 8

/** LRU over a Map (insertion order), bounded by the summed length of keys and values. */
export class MemoryResultCache {
  private readonly map = new Map<string, string>()
  private bytes = 0

  constructor(readonly maxBytes: number) {}

  get(key: string): string | undefined {
    const v = this.map.get(key)
    if (v === undefined) return undefined
    // Refresh recency: re-inserting moves the entry to the end of the iteration order.
    this.map.delete(key)
    this.map.set(key, v)
    return v
  }

  set(key: string, json: string): void {
    const size = key.length + json.length
    if (size > this.maxBytes / MAX_ENTRY_FRACTION) return
    const old = this.map.get(key)
    if (old !== undefined) {
      this.bytes -= key.length + old.length
      this.map.delete(key)
    }
    this.map.set(key, json)
    this.bytes += size
    for (const [k, v] of this.map) {
      if (this.bytes <= this.maxBytes) break
      this.map.delete(k)
      this.bytes -= k.length + v.length
    }
  }

  get size(): number {
    return this.map.size
  }

  get usedBytes(): number {
    return this.bytes
  }
}

/** Memory only (single instance, no REDIS_URL). */
export class LocalResultCache implements ResultCache {
  constructor(private readonly memory: MemoryResultCache) {}
  getLocal(key: string) {
    return this.memory.get(key)
  }
  async getRemote(): Promise<string | undefined> {
    return undefined
  }
  set(key: string, json: string) {
    this.memory.set(key, json)
  }
}

const REDIS_PREFIX = 'halyard:rpc:'
/** Finalized data never changes; the TTL only lets Redis reclaim what nobody asks for. */
const REDIS_TTL_SECONDS = 86_400
const REDIS_MAX_ENTRY = 1024 * 1024
const REDIS_TIMEOUT_MS = 50

/**
 * Memory in front of Redis: instances share what any of them fetched, while hits that are
 * already local cost no round trip. Redis being slow or down degrades to a miss, never an error.
 */
export class TieredResultCache implements ResultCache {
  constructor(
    private readonly memory: MemoryResultCache,
    private readonly redis: Redis,
  ) {}

  getLocal(key: string) {
    return this.memory.get(key)
  }

  async getRemote(key: string): Promise<string | undefined> {
    if (this.redis.status !== 'ready') return undefined
    try {
      const v = await withTimeout(this.redis.get(REDIS_PREFIX + key), REDIS_TIMEOUT_MS)
      if (typeof v !== 'string') return undefined
      this.memory.set(key, v)
      return v
    } catch {
      return undefined
    }
  }

  set(key: string, json: string) {
    this.memory.set(key, json)
    if (json.length > REDIS_MAX_ENTRY || this.redis.status !== 'ready') return
    this.redis.set(REDIS_PREFIX + key, json, 'EX', REDIS_TTL_SECONDS).catch(() => {})
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => resolve(undefined), ms)
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
