import { z } from 'zod'

/**
 * PostgreSQL settings for embedded PGlite, chosen for a small single-tenant service. PGlite's
 * WebAssembly memory only ever grows, so every buffer Postgres touches stays in the process's
 * RSS: PGlite's default shared_buffers (128MB) alone held ~120 MB more than 16MB does
 * (bench/footprint.ts). Halyard's tables are small and hot rows stay in the OS page cache anyway.
 */
export interface PGliteSettings {
  /** Postgres `shared_buffers` (e.g. 16MB). */
  sharedBuffers: string
  /** Postgres `work_mem`: per sort/hash node. */
  workMem: string
  /** Postgres `maintenance_work_mem`: CREATE INDEX during migrations. */
  maintenanceWorkMem: string
  /** Postgres `temp_buffers`: Halyard uses no temporary tables. */
  tempBuffers: string
}

export const PGLITE_DEFAULTS: Readonly<PGliteSettings> = Object.freeze({
  sharedBuffers: '16MB',
  workMem: '4MB',
  maintenanceWorkMem: '16MB',
  tempBuffers: '1MB',
})

const memory = z
  .string()
  .regex(/^[1-9]\d{0,6}(kB|MB|GB)$/, 'must be a size such as 16MB or 512kB')
  .optional()

/** Environment fields for the settings (validated with the rest in src/config/env.ts). */
export const pgliteEnvShape = {
  HALYARD_PGLITE_SHARED_BUFFERS: memory.describe(
    "Embedded PGlite's `shared_buffers` (default 16MB; PGlite's memory only grows, so it stays in the process's memory).",
  ),
  HALYARD_PGLITE_WORK_MEM: memory.describe("Embedded PGlite's `work_mem`, per sort or hash (default 4MB)."),
  HALYARD_PGLITE_MAINTENANCE_WORK_MEM: memory.describe(
    "Embedded PGlite's `maintenance_work_mem`, used by CREATE INDEX in migrations (default 16MB).",
  ),
  HALYARD_PGLITE_TEMP_BUFFERS: memory.describe("Embedded PGlite's `temp_buffers` (default 1MB)."),
  HALYARD_CACHE_DIR: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Where the initialised PGlite data-dir template is kept (default: $XDG_CACHE_HOME/halyard or ~/.cache/halyard).',
    ),
}

const pgliteEnvSchema = z.object(pgliteEnvShape)

/**
 * The settings in effect: the defaults, overridden by HALYARD_PGLITE_* variables. Read here
 * rather than threaded through every openStorage caller; loadEnv() has already refused bad
 * values at start-up with the same schema, so a parse failure here is a programming error.
 */
export function pgliteSettings(source: NodeJS.ProcessEnv = process.env): PGliteSettings {
  const picked: Record<string, string> = {}
  for (const key of Object.keys(pgliteEnvShape)) {
    const v = source[key]
    if (v !== undefined && v !== '') picked[key] = v
  }
  const env = pgliteEnvSchema.parse(picked)
  return {
    sharedBuffers: env.HALYARD_PGLITE_SHARED_BUFFERS ?? PGLITE_DEFAULTS.sharedBuffers,
    workMem: env.HALYARD_PGLITE_WORK_MEM ?? PGLITE_DEFAULTS.workMem,
    maintenanceWorkMem: env.HALYARD_PGLITE_MAINTENANCE_WORK_MEM ?? PGLITE_DEFAULTS.maintenanceWorkMem,
    tempBuffers: env.HALYARD_PGLITE_TEMP_BUFFERS ?? PGLITE_DEFAULTS.tempBuffers,
  }
}

/**
 * PGlite's own start parameters (single-user mode, no parallel workers, synchronous I/O)
 * followed by ours: passing `startParams` replaces PGlite's list, so it is extended, not
 * restated (the caller passes `PGlite.defaultStartParams`, so this file loads no PGlite). The last `-c` of a name wins; src/storage/pglite-settings.test.ts checks with SHOW.
 */
export function pgliteStartParams(s: PGliteSettings, pgliteDefaults: readonly string[]): string[] {
  const c = (name: string, value: string) => ['-c', `${name}=${value}`]
  return [
    ...pgliteDefaults,
    ...c('shared_buffers', s.sharedBuffers),
    ...c('work_mem', s.workMem),
    ...c('maintenance_work_mem', s.maintenanceWorkMem),
    ...c('temp_buffers', s.tempBuffers),
  ]
}
