import { parseArgs } from 'node:util'
import { loadEnv } from '../config/env.ts'
import { ConfigError } from '../config/validation.ts'
import { HalyardError } from '../errors.ts'
import { openStorage } from '../storage/database.ts'
import { migrate } from '../storage/migrate.ts'
import { runAdminCommand } from './admin-commands.ts'
import { readAdminFile } from './data-dir.ts'
import { dev } from './dev.ts'
import { serve } from './serve.ts'
import { USAGE, UsageError } from './usage.ts'

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  try {
    if (!command || command === '--help' || command === '-h' || command === 'help') {
      console.log(USAGE)
      return command ? 0 : 2
    }
    const env = loadEnv()
    switch (command) {
      case 'dev': {
        const { values } = parseArgs({
          args: rest,
          options: { 'block-time': { type: 'string' }, demo: { type: 'boolean' } },
          strict: true,
        })
        const blockTime = values['block-time'] === undefined ? 1 : Number(values['block-time'])
        if (!Number.isFinite(blockTime) || blockTime < 0 || blockTime > 3600) {
          throw new UsageError('--block-time must be a number of seconds between 0 and 3600')
        }
        await dev(env, { blockTime, demo: values.demo === true })
        return 0
      }
      case 'serve': {
        const { values } = parseArgs({ args: rest, options: { config: { type: 'string' } }, strict: true })
        await serve(env, values.config)
        return 0
      }
      case 'migrate': {
        if (!env.DATABASE_URL && readAdminFile(env.dataDir)) {
          console.log('a running server holds the data dir and has applied every migration')
          return 0
        }
        const storage = await openStorage({ databaseUrl: env.DATABASE_URL, dataDir: env.dataDir })
        try {
          const applied = await migrate(storage.db)
          console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date')
        } finally {
          await storage.close()
        }
        return 0
      }
      case 'accounts':
      case 'keys':
        await runAdminCommand(command, rest, env)
        return 0
      default:
        throw new UsageError(`unknown command: ${command}`)
    }
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`error: ${err.message}\n\n${USAGE}`)
      return 2
    }
    if (err instanceof ConfigError || err instanceof HalyardError) {
      console.error(`error: ${err.message}`)
      return 1
    }
    const e = err as Error & { code?: string }
    if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      console.error(`error: ${e.message}\n\n${USAGE}`)
      return 2
    }
    console.error(`error: ${e.message}`)
    return 1
  }
}
