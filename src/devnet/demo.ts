import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import {
  type Abi,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  http,
  type PublicClient,
  stringToHex,
} from 'viem'
import { z } from 'zod'
import { type Address, type Hash, toLowerAddress } from '../types.ts'
import { type CompiledContract, compileSol } from './demo-contracts/compile.ts'

/** Anvil's first pre-funded, unlocked account: the devnet's "dev account". */
export const DEV_ACCOUNT: Address = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266'

export type DemoContractName =
  | 'DemoERC20'
  | 'DemoERC721'
  | 'DemoERC1155'
  | 'LegacyERC721'
  | 'Bytes32Token'
  | 'DemoAggregator'

export function demoArtifact(name: DemoContractName): CompiledContract {
  const c = compileSol('DemoTokens.sol')[name]
  if (!c) throw new Error(`DemoTokens.sol has no contract ${name}`)
  return c
}

/** A tiny client for an anvil node: deploys and calls from the unlocked dev account. */
export class Devnet {
  readonly client: PublicClient
  private readonly wallet

  constructor(
    readonly url: string,
    readonly from: Address = DEV_ACCOUNT,
  ) {
    this.client = createPublicClient({ transport: http(url) })
    this.wallet = createWalletClient({ transport: http(url), account: from })
  }

  /**
   * Submissions go one at a time (receipts are awaited concurrently): anvil assigns the nonce of
   * an unlocked account on arrival, and two racing requests could get the same one.
   */
  private submissions: Promise<unknown> = Promise.resolve()
  private submit<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.submissions.then(fn, fn)
    this.submissions = next.catch(() => {})
    return next
  }

  async deploy(name: DemoContractName, args: readonly unknown[] = []): Promise<Address> {
    const art = demoArtifact(name)
    const hash = await this.submit(() =>
      this.wallet.deployContract({
        abi: art.abi,
        bytecode: art.bytecode,
        args,
        chain: null,
        gas: 8_000_000n,
      }),
    )
    const receipt = await this.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    if (!receipt.contractAddress || receipt.status !== 'success') throw new Error(`deploying ${name} failed`)
    return toLowerAddress(receipt.contractAddress)
  }

  /** Sends a contract call and waits for it to be mined; throws if it reverted. */
  async send(
    name: DemoContractName,
    to: Address,
    fn: string,
    args: readonly unknown[],
    opts: { gas?: bigint; wait?: boolean } = {},
  ): Promise<Hash> {
    const abi = demoArtifact(name).abi
    const data = encodeFunctionData({ abi, functionName: fn, args } as Parameters<
      typeof encodeFunctionData
    >[0])
    const hash = await this.submit(() =>
      this.wallet.sendTransaction({ to, data, chain: null, gas: opts.gas ?? 5_000_000n }),
    )
    if (opts.wait !== false) {
      const r = await this.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
      if (r.status !== 'success') throw new Error(`${name}.${fn} reverted`)
    }
    return hash
  }

  async read<T>(name: DemoContractName, to: Address, fn: string, args: readonly unknown[] = []): Promise<T> {
    const abi: Abi = demoArtifact(name).abi
    return (await this.client.readContract({ address: to, abi, functionName: fn, args })) as T
  }

  async rpc<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    return (await this.client.request({ method, params } as never)) as T
  }
}

export interface DemoContracts {
  usd: Address
  gold: Address
  maker: Address
  nft: Address
  items: Address
}

/** A small JSON document as a `data:` URI, so the demo NFTs need no web server. */
function dataJson(obj: unknown): string {
  return `data:application/json;base64,${Buffer.from(JSON.stringify(obj)).toString('base64')}`
}

/**
 * `halyard dev --demo`: deploys sample ERC-20s (6 and 18 decimals, and a bytes32-named one),
 * an ERC-721 and an ERC-1155, and gives `holder` some of each, so every data endpoint has real
 * answers. Transactions are sent back to back and awaited together, so with interval mining
 * the whole setup takes a couple of blocks, not one block per transaction.
 */
export async function deployDemo(url: string, holder: Address = DEV_ACCOUNT): Promise<DemoContracts> {
  const d = new Devnet(url)
  const [usd, gold, maker, nft, items] = await Promise.all([
    d.deploy('DemoERC20', ['Demo Dollar', 'DUSD', 6]),
    d.deploy('DemoERC20', ['Demo Gold', 'DGLD', 18]),
    d.deploy('Bytes32Token', [stringToHex('Maker', { size: 32 }), stringToHex('MKR', { size: 32 })]),
    d.deploy('DemoERC721', ['Halyard Sailors', 'SAIL']),
    d.deploy('DemoERC1155', ['data:application/json,{"name":"Item {id}"}', 'Halyard Items', 'ITEM']),
  ])
  const sends: Promise<Hash>[] = [
    d.send('DemoERC20', usd, 'mint', [holder, 1_234_567_890n]),
    d.send('DemoERC20', gold, 'mint', [holder, 42n * 10n ** 18n + 5n]),
    d.send('Bytes32Token', maker, 'mint', [holder, 7n * 10n ** 18n]),
    d.send('DemoERC721', nft, 'setContractURI', [
      dataJson({ name: 'Halyard Sailors', description: 'Demo collection on the Halyard devnet' }),
    ]),
    d.send('DemoERC1155', items, 'mintBatch', [holder, [1n, 2n], [10n, 3n]]),
  ]
  for (const id of [1n, 2n, 3n]) {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg"><text y="20">${id}</text></svg>`
    const meta = {
      name: `Sailor #${id}`,
      description: 'A demo ERC-721 token',
      image: `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`,
      attributes: [{ trait_type: 'rank', value: Number(id) }],
    }
    sends.push(d.send('DemoERC721', nft, 'mint', [holder, id, dataJson(meta)]))
  }
  await Promise.all(sends)
  return {
    usd,
    gold,
    maker,
    nft,
    items,
  }
}

const demoFileSchema = z.object({
  usd: z.string(),
  gold: z.string(),
  maker: z.string(),
  nft: z.string(),
  items: z.string(),
})

/**
 * Deploys the demo once per devnet: the addresses are kept in the data dir and reused while the
 * (persisted) chain still has code there. Returns lines for the dev banner.
 */
export async function ensureDemo(url: string, dataDir: string): Promise<string[]> {
  const file = path.join(dataDir, 'demo-contracts.json')
  let demo: DemoContracts | undefined
  if (existsSync(file)) {
    const saved = demoFileSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')))
    if (saved.success) {
      const code = await new Devnet(url).rpc<string>('eth_getCode', [saved.data.usd, 'latest'])
      if (code && code !== '0x') demo = saved.data as DemoContracts
    }
  }
  if (!demo) {
    demo = await deployDemo(url)
    writeFileSync(file, JSON.stringify(demo, null, 2))
  }
  // Dev mode reads prices from this static file (src/prices/registry.ts); an operator's own file wins.
  const prices = path.join(dataDir, 'prices.json')
  if (!existsSync(prices)) {
    writeFileSync(
      prices,
      JSON.stringify({ native: '3000', [demo.usd]: '1', [demo.gold]: '2650.25' }, null, 2),
    )
  }
  return [
    `Demo tokens held by the dev account ${DEV_ACCOUNT}:`,
    `  ERC-20  DUSD ${demo.usd}, DGLD ${demo.gold}, MKR (bytes32) ${demo.maker}`,
    `  ERC-721 SAIL ${demo.nft} (ids 1-3), ERC-1155 ITEM ${demo.items} (ids 1, 2)`,
    `  curl -s <base>/tokens/ethereum-devnet/balances/${DEV_ACCOUNT} -H 'X-API-Key: <key>'`,
    `  curl -s <base>/nfts/ethereum-devnet/owned/${DEV_ACCOUNT} -H 'X-API-Key: <key>'`,
    `  curl -s <base>/nfts/ethereum-devnet/metadata/${demo.nft}/1 -H 'X-API-Key: <key>'`,
    '',
  ]
}
