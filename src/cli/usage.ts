import { readFileSync } from 'node:fs'

export class UsageError extends Error {
  constructor(
    message: string,
    /** The usage text to print with the error: the command's own, or the whole list. */
    readonly usage: string = USAGE,
  ) {
    super(message)
    this.name = 'UsageError'
  }
}

/** Each command's usage lines, keyed as typed: `dev`, `keys create`, … */
export const COMMAND_USAGE: Record<string, string> = {
  dev: `dev [--block-time SECONDS] [--demo]     run on a local anvil devnet (what npm start runs);
                                          --demo deploys sample tokens and NFTs to the dev account`,
  serve: 'serve [--config FILE]                   production mode; networks from the YAML config',
  migrate: 'migrate                                 apply database migrations and exit',
  import: `import --network SLUG --parquet DIR [--batch BLOCKS]
                                          history from cryo-layout Parquet files (blocks, transactions,
                                          logs, optional traces) into the index, continuing its cursor;
                                          stop the network's indexer first`,
  'accounts create': 'accounts create --email E [--plan free|growth|enterprise]',
  'accounts set-plan': 'accounts set-plan --account E --plan P',
  'accounts login-link': 'accounts login-link --account E [--base-url URL]   one-time dashboard sign-in link',
  'keys create': `keys create --account E --env test|live [--scopes a,b] [--name N]
              [--allowed-origins A,B] [--allowed-ips C] [--allowed-contracts D] [--allowed-methods E]`,
  'keys list': 'keys list --account E',
  'keys update': `keys update KEY_ID [--allowed-origins A,B | --clear-allowed-origins] [--allowed-ips …]
              [--clear-allowed-ips] [--allowed-contracts …] [--clear-allowed-contracts]
              [--allowed-methods …] [--clear-allowed-methods]   (a list given replaces the old one)`,
  'keys revoke': 'keys revoke KEY_ID',
}

const ENVIRONMENT = `environment: HALYARD_HOST, HALYARD_PORT, HALYARD_DATA_DIR, HALYARD_CONFIG, DATABASE_URL,
REDIS_URL, HALYARD_SECRET_KEY, HALYARD_PUBLIC_URL, HALYARD_TRUSTED_PROXIES, SMTP_URL,
HALYARD_LOG_LEVEL`

const indent = (s: string) => s.replace(/^/gm, '  ')

export const USAGE = `usage: halyard <command> [options]     (halyard <command> --help, halyard --version)

${indent(Object.values(COMMAND_USAGE).join('\n'))}

${ENVIRONMENT}`

/** The usage of `command` (`keys`, or `keys create`): its own lines, or its group's. */
export function usageOf(command: string): string {
  const own = COMMAND_USAGE[command]
  if (own) return `usage: halyard ${own}\n\n${ENVIRONMENT}`
  const group = Object.entries(COMMAND_USAGE).filter(([k]) => k.startsWith(`${command} `))
  if (group.length === 0) return USAGE
  return `usage: halyard ${command} <subcommand>\n\n${indent(group.map(([, v]) => v).join('\n'))}\n\n${ENVIRONMENT}`
}

export const wantsHelp = (args: readonly string[]) => args.includes('--help') || args.includes('-h')

/** The package's version (package.json), for `halyard --version`. */
export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string
  }
  return pkg.version
}
