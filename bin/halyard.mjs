#!/usr/bin/env node
// Runs the prebuilt sources (bin/build-cache.mjs: built on first start and after any source
// change), or, with HALYARD_BUILD=0 or when no build can be made, the TypeScript sources directly
// through tsx. Either way there is no build step between `npm ci` and `npm start`.
import { readFileSync } from 'node:fs'
import path from 'node:path'

const root = path.resolve(import.meta.dirname, '..')

// Answered before any build or loader: `halyard --version` is instant even on a fresh install.
if (['--version', '-v', 'version'].includes(process.argv[2] ?? '')) {
  process.stdout.write(`${JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version}\n`)
  process.exit(0)
}

async function loadMain() {
  if (process.env.HALYARD_BUILD !== '0') {
    try {
      const { ensureBuild } = await import('./build-cache.mjs')
      return await import(await ensureBuild(root))
    } catch (err) {
      process.stderr.write(
        `halyard: running the sources through tsx (no prebuilt copy: ${err?.message ?? err})\n`,
      )
    }
  }
  // The servers' heavy dependencies are plain JavaScript: loaded before tsx's hooks are
  // registered, Node's own loader takes them without a round trip through the hooks thread per
  // file; the sources then get the same module instances (~15-20% faster module load).
  const command = process.argv[2]
  if (command === 'dev' || command === 'serve') {
    const preload = ['viem', 'viem/accounts', 'kysely', 'zod', 'fastify', 'pg', 'ioredis', 'undici', 'pino']
    await Promise.all([...preload, 'prom-client', 'ws', 'yaml'].map((m) => import(m).catch(() => {})))
  }
  const { register } = await import('tsx/esm/api')
  register()
  return import('../src/cli/main.ts')
}

const { main } = await loadMain()
const code = await main(process.argv.slice(2))
process.exit(code)
