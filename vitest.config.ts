import { defineConfig } from 'vitest/config'

/**
 * Files that keep a fresh module graph each (a process of their own): fault injection and
 * crash tests, whose timing on a loaded machine is part of what they check, the CLI tests, and
 * the footprint test, which measures what a process loads. They spend their time in child
 * processes, so a fresh graph costs them little.
 */
const ISOLATED = [
  'test/faults/**/*.test.ts',
  'src/**/*.crash.test.ts',
  'src/**/*.cli.test.ts',
  'src/cli/cli.test.ts',
  'src/devnet/footprint.test.ts',
]

// Tests start real anvil nodes, databases and servers: give them time, and keep
// parallelism at the machine's two cores so timing-sensitive chain tests stay stable.
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    fileParallelism: true,
    reporters: ['default', './test/summary-reporter.ts'],
    // The migrated PGlite image every test database starts from (test/helpers/pglite-image.ts).
    globalSetup: ['./test/global-setup.ts'],
    projects: [
      {
        extends: true,
        test: { name: 'isolated', include: ISOLATED, isolate: true },
      },
      {
        // The rest share each worker's module graph: without it, every file paid ~1.5–3 s (more
        // on a loaded machine) re-evaluating viem, Fastify, Kysely and the server's modules, a
        // quarter of the run. No test mocks modules or fakes timers; each starts its own anvil,
        // database and server and closes them.
        extends: true,
        test: {
          name: 'shared',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: ISOLATED,
          isolate: false,
        },
      },
    ],
  },
})
