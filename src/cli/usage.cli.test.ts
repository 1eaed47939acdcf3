import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { runCli } from '../../test/helpers/cli.ts'
import { COMMAND_USAGE } from './usage.ts'

const pkg = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8')) as {
  version: string
}

/** Runs the CLI processes one after another: together they would compete for a loaded machine's cores. */
async function inTurn<T>(runs: (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = []
  for (const run of runs) out.push(await run())
  return out
}

/** A fresh data dir per run: any side effect (a database made, a migration run) shows up as files in it. */
function freshEnv() {
  const dir = mkdtempSync(path.join(tmpdir(), 'halyard-usage-'))
  return { dir, env: { HALYARD_DATA_DIR: dir, DATABASE_URL: '', REDIS_URL: '' } }
}

describe('halyard --version and --help', () => {
  it('prints the package version', async () => {
    for (const flag of ['--version', '-v']) {
      const run = await runCli([flag], {})
      expect(run.code).toBe(0)
      expect(run.stdout.trim()).toBe(pkg.version)
    }
  })

  it('answers --help on every command with its usage and no side effect', async () => {
    const { dir, env } = freshEnv()
    const commands = [...Object.keys(COMMAND_USAGE), 'keys', 'accounts']
    const runs = await inTurn(commands.map((c) => () => runCli([...c.split(' '), '--help'], env)))
    for (const [i, command] of commands.entries()) {
      const run = runs[i] as Awaited<ReturnType<typeof runCli>>
      expect(run.code, `${command}: ${run.stderr}`).toBe(0)
      expect(run.stdout).toContain(`usage: halyard ${command}`)
      expect(run.stderr).toBe('')
    }
    // -h is the same; options before it do not matter
    const short = await runCli(['dev', '--block-time', '2', '-h'], env)
    expect(short.code).toBe(0)
    expect(short.stdout).toContain('--block-time SECONDS')
    expect(readdirSync(dir)).toEqual([])
  }, 300_000)
})

describe('unknown options and arguments are refused with the usage line', () => {
  it('refuses migrate --foo without migrating', async () => {
    const { dir, env } = freshEnv()
    const run = await runCli(['migrate', '--foo'], env)
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/error: .*--foo/)
    expect(run.stderr).toContain('usage: halyard migrate')
    expect(run.stdout).toBe('')
    expect(readdirSync(dir)).toEqual([])
  })

  it('refuses unknown options on dev and serve, and stray arguments', async () => {
    const { dir, env } = freshEnv()
    for (const args of [
      ['dev', '--nope'],
      ['serve', '--config'],
      ['serve', 'extra'],
      ['migrate', 'now'],
    ]) {
      const run = await runCli(args, env)
      expect(run.code, args.join(' ')).toBe(2)
      expect(run.stderr).toContain(`usage: halyard ${args[0]}`)
    }
    expect(readdirSync(dir)).toEqual([])
  })

  it('refuses an option another subcommand takes, a missing one and an unknown subcommand, before opening a database', async () => {
    const { dir, env } = freshEnv()
    const cases: [string[], RegExp, string][] = [
      [
        ['keys', 'list', '--account', 'a@b.c', '--plan', 'free'],
        /keys list does not take --plan/,
        'keys list',
      ],
      [['keys', 'list'], /--account is required/, 'keys list'],
      [['keys', 'revoke'], /KEY_ID is required/, 'keys revoke'],
      [['keys', 'revoke', 'a', 'b'], /unexpected argument b/, 'keys revoke'],
      [['keys', 'update', 'k1'], /at least one/, 'keys update'],
      [['accounts', 'create', '--bogus'], /--bogus/, 'accounts'],
      [['keys', 'frob'], /unknown command: keys frob/, 'keys <subcommand>'],
      [['frob', '--help'], /unknown command: frob/, '<command>'],
    ]
    const runs = await inTurn(
      cases.map(
        ([args]) =>
          () =>
            runCli(args, env),
      ),
    )
    for (const [i, [args, message, usage]] of cases.entries()) {
      const run = runs[i] as Awaited<ReturnType<typeof runCli>>
      expect(run.code, args.join(' ')).toBe(2)
      expect(run.stderr).toMatch(message)
      expect(run.stderr).toContain(`usage: halyard ${usage}`)
    }
    expect(readdirSync(dir)).toEqual([])
  }, 300_000)
})
