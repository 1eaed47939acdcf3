import { parseArgs } from 'node:util'
import { ConfigError } from '../common/validation.ts'
import { loadEnv } from '../config/env.ts'
import { HalyardError } from '../errors.ts'
import { readAdminFile } from './data-dir.ts'
import { USAGE, UsageError, usageOf, version, wantsHelp } from './usage.ts'

// Each command imports only its own module graph when it runs: `keys create` need not load the
// server, and `serve` need not load the devnet tooling (bench/footprint.ts measures start-up).

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  try {
    if (!command || command === '--help' || command === '-h' || command === 'help') {
      console.log(USAGE)
      return command ? 0 : 2
    }
    if (command === '--version' || command === '-v' || command === 'version') {
      console.log(version())
      return 0
    }
    // Help comes before anything that reads the environment or touches a database: `--help`
    // never has a side effect. `keys --help` shows the group, `keys create --help` the one command.
    if (wantsHelp(rest)) {
      const sub = rest[0] && !rest[0].startsWith('-') ? `${command} ${rest[0]}` : command
      const text = usageOf(sub) === USAGE ? usageOf(command) : usageOf(sub)
      if (text === USAGE) throw new UsageError(`unknown command: ${command}`)
      console.log(text)
      return 0
    }
    const env = loadEnv()
    // Nothing Halyard writes is meant for other users (the database, secrets, the admin token):
    // files made while running are private too, not only those tightened at start.
    process.umask(0o077)
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
        const { dev } = await import('./dev.ts')
        await dev(env, { blockTime, demo: values.demo === true })
        return 0
      }
      case 'serve': {
        const { values } = parseArgs({ args: rest, options: { config: { type: 'string' } }, strict: true })
        const { serve } = await import('./serve.ts')
        await serve(env, values.config)
        return 0
      }
      case 'migrate': {
        // Strict even with no options: `migrate --foo` is refused before it touches the database.
        parseArgs({ args: rest, options: {}, strict: true })
        if (!env.DATABASE_URL && readAdminFile(env.dataDir)) {
          console.log('a running server holds the data dir and has applied every migration')
          return 0
        }
        const { openStorage } = await import('../storage/database.ts')
        const { migrate } = await import('../storage/migrate.ts')
        const storage = await openStorage({ databaseUrl: env.DATABASE_URL, dataDir: env.dataDir })
        try {
          const applied = await migrate(storage.db)
          console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date')
        } finally {
          await storage.close()
        }
        return 0
      }
      case 'import': {
        const { runImport } = await import('./import.ts')
        await runImport(rest, env)
        return 0
      }
      case 'accounts':
      case 'keys': {
        const { runAdminCommand } = await import('./admin-commands.ts')
        await runAdminCommand(command, rest, env)
        return 0
      }
      default:
        throw new UsageError(`unknown command: ${command}`)
    }
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`error: ${err.message}\n\n${err.usage}`)
      return 2
    }
    if (err instanceof ConfigError || err instanceof HalyardError) {
      console.error(`error: ${err.message}`)
      return 1
    }
    const e = err as Error & { code?: string }
    if (e.code?.startsWith('ERR_PARSE_ARGS_')) {
      console.error(`error: ${e.message}\n\n${command ? usageOf(command) : USAGE}`)
      return 2
    }
    console.error(`error: ${e.message}`)
    return 1
  }
}
