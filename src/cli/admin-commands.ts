import { parseArgs } from 'node:util'
import { ALLOWLIST_NAMES, splitList } from '../auth/allowlists.ts'
import type { AllowlistInput, KeyView } from '../auth/service.ts'
import type { Env } from '../config/env.ts'
import { openAdminBackend } from './admin-backend.ts'
import { UsageError, usageOf } from './usage.ts'

/** Prints a key's allowlists, one line each; "any" where a list is empty (no restriction). */
function printLists(k: KeyView): void {
  for (const name of ALLOWLIST_NAMES) {
    const entries = k[`allowed_${name}`]
    console.log(`  allowed ${name}: ${entries.length ? entries.join(',') : 'any'}`)
  }
}

const ALLOWLIST_FLAGS = ALLOWLIST_NAMES.flatMap((n) => [`allowed-${n}`, `clear-allowed-${n}`])

/** The options each subcommand takes; any other option is refused before a database is opened. */
const ACCEPTS: Record<string, readonly string[]> = {
  'accounts create': ['email', 'plan'],
  'accounts set-plan': ['account', 'plan'],
  'accounts login-link': ['account', 'base-url'],
  'keys create': [
    'account',
    'env',
    'scopes',
    'name',
    ...ALLOWLIST_FLAGS.filter((f) => !f.startsWith('clear-')),
  ],
  'keys list': ['account'],
  'keys update': ALLOWLIST_FLAGS,
  'keys revoke': [],
}
const TAKES_KEY_ID = new Set(['keys update', 'keys revoke'])
const REQUIRES: Record<string, readonly ('email' | 'account' | 'plan' | 'env')[]> = {
  'accounts create': ['email'],
  'accounts set-plan': ['account', 'plan'],
  'accounts login-link': ['account'],
  'keys create': ['account', 'env'],
  'keys list': ['account'],
}

/** `accounts create|set-plan|login-link` and `keys create|list|update|revoke`. */
export async function runAdminCommand(group: string, argv: string[], env: Env): Promise<void> {
  const [sub, ...rest] = argv
  const command = `${group} ${sub ?? ''}`.trim()
  const accepts = ACCEPTS[command]
  if (!accepts) throw new UsageError(`unknown command: ${command}`, usageOf(group))
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      email: { type: 'string' },
      account: { type: 'string' },
      plan: { type: 'string' },
      env: { type: 'string' },
      scopes: { type: 'string' },
      name: { type: 'string' },
      'base-url': { type: 'string' },
      'allowed-origins': { type: 'string' },
      'allowed-ips': { type: 'string' },
      'allowed-contracts': { type: 'string' },
      'allowed-methods': { type: 'string' },
      'clear-allowed-origins': { type: 'boolean' },
      'clear-allowed-ips': { type: 'boolean' },
      'clear-allowed-contracts': { type: 'boolean' },
      'clear-allowed-methods': { type: 'boolean' },
    },
    allowPositionals: true,
    strict: true,
  })
  const usage = usageOf(command)
  for (const given of Object.keys(values)) {
    if (!accepts.includes(given)) throw new UsageError(`${command} does not take --${given}`, usage)
  }
  if (positionals.length > (TAKES_KEY_ID.has(command) ? 1 : 0)) {
    throw new UsageError(`${command}: unexpected argument ${positionals.at(-1)}`, usage)
  }
  const need = (name: keyof typeof values): string => {
    const v = values[name]
    if (typeof v !== 'string' || v === '') throw new UsageError(`${command}: --${name} is required`, usage)
    return v
  }

  // `--allowed-X A,B` sets a list, `--clear-allowed-X` (or `--allowed-X ''`) empties it.
  const allow: AllowlistInput = {}
  for (const name of ALLOWLIST_NAMES) {
    const given = values[`allowed-${name}`]
    const clear = values[`clear-allowed-${name}`] === true
    if (clear && given !== undefined && given !== '')
      throw new UsageError(`${command}: --allowed-${name} and --clear-allowed-${name} together`, usage)
    if (clear) allow[name] = []
    else if (given !== undefined) allow[name] = splitList(given)
  }

  // Every check that needs no database runs before one is opened.
  for (const name of REQUIRES[command] ?? []) need(name)
  if (TAKES_KEY_ID.has(command) && !positionals[0])
    throw new UsageError(`${command}: KEY_ID is required`, usage)
  if (command === 'keys update' && Object.keys(allow).length === 0)
    throw new UsageError('keys update: give at least one --allowed-… or --clear-allowed-… flag', usage)

  const backend = await openAdminBackend(env)
  try {
    if (group === 'accounts' && sub === 'create') {
      const a = await backend.createAccount(need('email'), values.plan)
      console.log(`account ${a.id} ${a.email} plan=${a.plan}`)
    } else if (group === 'accounts' && sub === 'set-plan') {
      const a = await backend.setPlan(need('account'), need('plan'))
      console.log(`account ${a.id} ${a.email} plan=${a.plan}`)
    } else if (group === 'accounts' && sub === 'login-link') {
      const url = await backend.loginLink(need('account'), values['base-url'])
      console.log('Dashboard sign-in link (works once, for 15 minutes):')
      console.log(url)
    } else if (group === 'keys' && sub === 'create') {
      const scopes = values.scopes
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean)
      const k = await backend.createKey({
        account: need('account'),
        env: need('env'),
        ...(scopes ? { scopes } : {}),
        ...(values.name ? { name: values.name } : {}),
        allow,
      })
      console.log(`key ${k.id} env=${k.env} scopes=${k.scopes.join(',')}${k.name ? ` name=${k.name}` : ''}`)
      printLists(k)
      console.log('This key is shown once; store it now:')
      console.log(k.key)
    } else if (group === 'keys' && sub === 'list') {
      const keys = await backend.listKeys(need('account'))
      if (keys.length > 0) console.log(['ID', 'PREFIX', 'ENV', 'STATE', 'SCOPES', 'NAME'].join('\t'))
      for (const k of keys) {
        const state = k.revoked_at ? `revoked ${k.revoked_at}` : 'active'
        console.log(`${k.id}\t${k.prefix}\t${k.env}\t${state}\t${k.scopes.join(',')}\t${k.name ?? ''}`)
      }
      if (keys.length === 0) console.log('no keys')
    } else if (group === 'keys' && sub === 'update') {
      const id = positionals[0]
      if (!id) throw new UsageError('keys update: KEY_ID is required', usage)
      if (Object.keys(allow).length === 0)
        throw new UsageError('keys update: give at least one --allowed-… or --clear-allowed-… flag', usage)
      const k = await backend.updateKey(id, allow)
      console.log(`key ${k.id} updated`)
      printLists(k)
    } else if (group === 'keys' && sub === 'revoke') {
      const id = positionals[0]
      if (!id) throw new UsageError('keys revoke: KEY_ID is required', usage)
      const k = await backend.revokeKey(id)
      console.log(`key ${k.id} revoked at ${k.revoked_at}`)
    }
  } finally {
    await backend.close()
  }
}
