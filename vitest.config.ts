import { defineConfig } from 'vitest/config'

// Tests start real anvil nodes, databases and servers: give them time, and keep
// parallelism at the machine's two cores so timing-sensitive chain tests stay stable.
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    fileParallelism: true,
    reporters: ['default', './test/summary-reporter.ts'],
    globalSetup: ['./test/global-setup.ts'],
  },
})
