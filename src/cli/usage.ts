export class UsageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

export const USAGE = `usage: halyard <command>

  dev [--block-time SECONDS] [--demo]     run on a local anvil devnet (what npm start runs);
                                          --demo deploys sample tokens and NFTs to the dev account
  serve [--config FILE]                   production mode; networks from the YAML config
  migrate                                 apply database migrations and exit
  import --network SLUG --parquet DIR [--batch BLOCKS]
                                          history from cryo-layout Parquet files into the index
  accounts create --email E [--plan free|growth|enterprise]
  accounts set-plan --account E --plan P
  accounts login-link --account E [--base-url URL]   one-time dashboard sign-in link
  keys create --account E --env test|live [--scopes a,b] [--name N]
              [--allowed-origins A,B] [--allowed-ips C] [--allowed-contracts D] [--allowed-methods E]
  keys list --account E
  keys update KEY_ID [--allowed-origins A,B | --clear-allowed-origins] [--allowed-ips …]
              [--clear-allowed-ips] [--allowed-contracts …] [--clear-allowed-contracts]
              [--allowed-methods …] [--clear-allowed-methods]   (a list given replaces the old one)
  keys revoke KEY_ID

environment: HALYARD_HOST, HALYARD_PORT, HALYARD_DATA_DIR, HALYARD_CONFIG, DATABASE_URL,
REDIS_URL, HALYARD_SECRET_KEY, HALYARD_PUBLIC_URL, HALYARD_TRUSTED_PROXIES, SMTP_URL,
HALYARD_LOG_LEVEL`
