import type { Redis } from 'ioredis'
import { LRUCache } from 'lru-cache'
import { withTimeout } from '../common/time.ts'

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

/**
 * LRU bounded by the summed length of keys and values. lru-cache keeps recency in a linked
 * list over preallocated slots, so an evicting `set` costs what any other does; the Map this
 * replaced found its victim by iterating from the front past deleted slots, which grew with
 * churn (~50× slower per set once full).
 */
export class MemoryResultCache {
  private readonly lru: LRUCache<string, string>

  constructor(readonly maxBytes: number) {
    this.lru = new LRUCache<string, string>({
      maxSize: maxBytes,
      maxEntrySize: maxBytes / MAX_ENTRY_FRACTION,
      sizeCalculation: (value, key) => key.length + value.length,
    })
  }

  get(key: string): string | undefined {
    return this.lru.get(key)
  }

  set(key: string, json: string): void {
    // Not stored at all (lru-cache would also drop an existing entry under this key).
    if (key.length + json.length > this.maxBytes / MAX_ENTRY_FRACTION) return
    this.lru.set(key, json)
  }

  get size(): number {
    return this.lru.size
  }

  get usedBytes(): number {
    return this.lru.calculatedSize
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
      const v = await withTimeout(this.redis.get(REDIS_PREFIX + key), REDIS_TIMEOUT_MS, () => undefined)
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
