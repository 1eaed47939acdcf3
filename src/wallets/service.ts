import type { Kysely } from 'kysely'
import { decodeFunctionResult, encodeEventTopics, encodeFunctionData, pad } from 'viem'
import { entryPoint07Abi } from 'viem/account-abstraction'
import { simpleAccountAddress } from '../aa/account-address.ts'
import { entryPointAbi, UPGRADED_TOPIC } from '../aa/contracts.ts'
import { call, getBlock, getCode, getLogs, hasCode, nodeAnswered } from '../chains/reads.ts'
import type { Network } from '../chains/registry.ts'
import { invalidRequest, notFound } from '../errors.ts'
import type { Logger } from '../logger.ts'
import type { Database } from '../storage/schema.ts'
import type { Address, Hash, Page } from '../types.ts'
import * as store from './store.ts'

export type WalletStatus = 'counterfactual' | 'deployed'

/** topic0 of `UserOperationEvent` (the same signature in EntryPoint v0.6 and v0.7). */
const [USER_OPERATION_EVENT] = encodeEventTopics({ abi: entryPoint07Abi, eventName: 'UserOperationEvent' })

/** Wire shapes. */
export interface CreatedWallet {
  address: Address
  owner: Address
  chain: string
  status: WalletStatus
  factory: Address
  created_at: string
}

export interface Wallet extends CreatedWallet {
  /** Present once deployed: UserOperations executed, read live from the chain. */
  nonce?: number
  deployed_at?: string | null
  deploy_tx?: Hash | null
}

export interface WalletListItem {
  address: Address
  owner: Address
  chain: string
  status: WalletStatus
  created_at: string
}

export interface WalletList {
  wallets: WalletListItem[]
  page: number
  total: number
}

export interface WalletServiceDeps {
  db: Kysely<Database>
  logger: Logger
  /** The configured network a stored wallet row names. */
  networkBySlug: (slug: string) => Network
  /** The last block the indexer committed on a network (null: none, or not indexed). */
  indexedHead: (slug: string) => Promise<bigint | null>
}

/** The SimpleAccountFactory v0.7 behind a network's wallets, or a 400 naming `chain`. */
export function walletFactory(net: Network): Address {
  const f = net.config.accountAbstraction?.simpleAccountFactory.v07
  if (net.kind !== 'evm' || !f) {
    throw invalidRequest(
      `chain ${net.slug} has no smart-wallet factory configured (accountAbstraction.simpleAccountFactory.v07)`,
    )
  }
  return f
}

/**
 * Smart wallets: counterfactual SimpleAccount v0.7 addresses computed
 * locally, linked to the API key that asked for them; status from the deployments the indexer
 * recorded (src/wallets/deployments.ts), with a live code check for deployments it could not
 * have seen (before the wallet existed here, or with indexing off).
 */
export class WalletService {
  constructor(private readonly deps: WalletServiceDeps) {}

  async create(
    keyId: string,
    net: Network,
    owner: Address,
    salt: bigint,
  ): Promise<{ wallet: CreatedWallet; created: boolean }> {
    const factory = walletFactory(net)
    const address = simpleAccountAddress(factory, owner, salt)
    const { linked } = await store.createWallet(this.deps.db, keyId, {
      network: net.slug,
      address,
      owner,
      salt,
      factory,
    })
    const [row] = await store.walletsAt(this.deps.db, keyId, address, net.slug)
    if (!row) throw new Error(`wallet ${address} vanished right after it was stored`)
    // The address is computed locally: a node that cannot answer must not fail the create.
    const deployment =
      row.deployment ??
      (await this.discoverDeployment(net, address).catch((err: Error) => {
        this.deps.logger.warn({ err: err.message, address, network: net.slug }, 'wallet code check failed')
        return null
      }))
    return {
      created: linked,
      wallet: {
        address,
        owner: row.owner,
        chain: net.slug,
        status: deployment ? 'deployed' : 'counterfactual',
        factory: row.factory,
        created_at: row.createdAt.toISOString(),
      },
    }
  }

  /** The key's wallet at `address` (on `net`, or the one it created first). */
  async get(keyId: string, address: Address, net: Network | undefined): Promise<Wallet> {
    const [row] = await store.walletsAt(this.deps.db, keyId, address, net?.slug)
    if (!row) throw notFound(`wallet ${address} not found for this API key${net ? ` on ${net.slug}` : ''}`)
    const network = net ?? this.deps.networkBySlug(row.network)
    const deployment = row.deployment ?? (await this.discoverDeployment(network, address))
    const base: Wallet = {
      address: row.address,
      owner: row.owner,
      chain: row.network,
      status: deployment ? 'deployed' : 'counterfactual',
      factory: row.factory,
      created_at: row.createdAt.toISOString(),
    }
    if (!deployment) return base
    return {
      ...base,
      nonce: await this.nonce(network, address, deployment.blockNumber),
      deployed_at: deployment.deployedAt?.toISOString() ?? null,
      deploy_tx: deployment.txHash,
    }
  }

  async list(keyId: string, page: Page, net: Network | undefined): Promise<WalletList> {
    const { rows, total } = await store.listWallets(this.deps.db, keyId, page, net?.slug)
    return {
      wallets: rows.map((r) => ({
        address: r.address,
        owner: r.owner,
        chain: r.network,
        status: r.deployment ? 'deployed' : 'counterfactual',
        created_at: r.createdAt.toISOString(),
      })),
      page: page.page,
      total,
    }
  }

  /**
   * The wallet's `nonce`: how many UserOperations it has executed (its UserOperationEvents at
   * the network's EntryPoints since its deployment block), read live. Not the EntryPoint's
   * key-0 nonce: clients such as permissionless.js (viem) take a fresh nonce key per op, so key
   * 0's sequence stays 0 however many ops ran. A node that refuses the log search gets key 0's
   * sequence instead (the count for clients that use key 0).
   */
  private async nonce(net: Network, address: Address, fromBlock: bigint): Promise<number> {
    const eps = net.config.accountAbstraction?.entryPoints ?? {}
    const entryPoints = [eps.v07, eps.v06].filter((a): a is Address => a !== undefined)
    try {
      const logs = await getLogs(net, {
        address: entryPoints,
        topics: [USER_OPERATION_EVENT, null, pad(address, { size: 32 })],
        fromBlock,
        toBlock: 'latest',
      })
      return logs.length
    } catch (err) {
      // Only a node that refused the search, or answered it in a shape that is not logs: one
      // that cannot be reached fails the request.
      if (!nodeAnswered(err)) throw err
      this.deps.logger.debug(
        { err: (err as Error).message, address, network: net.slug },
        'wallet op count by logs failed; EntryPoint key-0 nonce instead',
      )
    }
    return this.keyZeroNonce(net, address)
  }

  /** `EntryPoint.getNonce(address, 0)` on the v0.7 EntryPoint, read live. */
  private async keyZeroNonce(net: Network, address: Address): Promise<number> {
    const ep = net.config.accountAbstraction?.entryPoints.v07
    if (!ep) throw new Error(`${net.slug} has no v0.7 EntryPoint configured`)
    const data = encodeFunctionData({ abi: entryPointAbi, functionName: 'getNonce', args: [address, 0n] })
    const res = await call(net, { to: ep, data }, 'latest', { label: 'eth_call (EntryPoint.getNonce)' })
    const nonce = decodeFunctionResult({ abi: entryPointAbi, functionName: 'getNonce', data: res })
    // Key 0's sequence is a plain counter; it stays far below 2^53.
    return Number(nonce)
  }

  /**
   * A deployment the indexer did not record: code at the address means it is deployed. The
   * proxy's own `Upgraded` log (emitted once, while constructed) names the transaction; what is
   * found is stored (and rolled back by the tracker on a reorg like any other deployment).
   */
  private async discoverDeployment(net: Network, address: Address): Promise<store.Deployment | null> {
    if (!hasCode(await getCode(net, address))) return null
    try {
      const [first] = await getLogs(net, {
        address,
        topics: [UPGRADED_TOPIC],
        fromBlock: 'earliest',
        toBlock: 'latest',
      })
      if (first) {
        // The time is an extra: a node that cannot give the block leaves it unknown.
        const block = await getBlock(net, first.blockNumber).catch(() => null)
        const found: store.NewDeployment = {
          network: net.slug,
          address,
          txHash: first.transactionHash,
          blockNumber: first.blockNumber,
          blockHash: first.blockHash,
          deployedAt: block ? new Date(Number(block.timestamp) * 1000) : null,
          source: 'code',
        }
        // Stored only once the indexer has passed that block: a reorg of it then reaches the
        // tracker's onRollback. Before that, the indexer records the deployment itself.
        const indexed = await this.deps.indexedHead(net.slug)
        if (indexed !== null && found.blockNumber <= indexed)
          await store.saveDeployments(this.deps.db, [found])
        return { txHash: found.txHash, blockNumber: found.blockNumber, deployedAt: found.deployedAt }
      }
    } catch (err) {
      this.deps.logger.debug({ err: (err as Error).message, address }, 'deployment lookup by logs failed')
    }
    // Deployed, but the transaction is not known (node refused the log search): say so with nulls.
    return { txHash: null, blockNumber: 0n, deployedAt: null }
  }
}
