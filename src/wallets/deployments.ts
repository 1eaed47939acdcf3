import { ACCOUNT_DEPLOYED_TOPIC, UPGRADED_TOPIC } from '../aa/contracts.ts'
import { topicAddress } from '../indexer/decode.ts'
import type { ReportSkippedLog } from '../indexer/skipped-logs.ts'
import type { BlockConsumer, DbTransaction, IndexedBlock } from '../indexer/types.ts'
import { type Address, type Hash, toLowerAddress } from '../types.ts'
import { knownWallets, type NewDeployment, rollbackDeployments, saveDeployments } from './store.ts'

/**
 * Indexer consumer that moves wallets from counterfactual to deployed. It runs inside the
 * indexer's transaction, so a recorded deployment commits with the block (durable, exactly once)
 * and `onRollback` forgets deployments of undone blocks (reorg-safe).
 *
 * Two signals: the EntryPoint's `AccountDeployed(userOpHash, sender, factory, paymaster)` (every
 * such account is recorded, so a wallet created later still shows its deployment), and, for
 * deployments that bypass the EntryPoint (someone calling `createAccount` directly), the
 * ERC-1967 `Upgraded` log a proxy account emits from its own address while being constructed —
 * recorded only for addresses that are wallets here, since every proxy upgrade emits it.
 */
export class WalletDeploymentTracker implements BlockConsumer {
  readonly name = 'wallet-deployments'

  /**
   * @param entryPoints per network slug with ERC-4337 config, the EntryPoints whose events count.
   * @param onSkippedLog where a malformed `AccountDeployed` is reported (the indexer's counter).
   */
  constructor(
    private readonly entryPoints: ReadonlyMap<string, ReadonlySet<Address>>,
    private readonly onSkippedLog: ReportSkippedLog = () => {},
  ) {}

  async onBlock(trx: DbTransaction, block: IndexedBlock): Promise<void> {
    const eps = this.entryPoints.get(block.network)
    // No ERC-4337 config on this network: no wallets can exist on it, nothing to look for.
    if (!eps) return
    const found = new Map<Address, NewDeployment>()
    const proxies = new Map<Address, Hash>()
    const deployment = (address: Address, txHash: Hash, source: NewDeployment['source']): NewDeployment => ({
      network: block.network,
      address,
      txHash,
      blockNumber: block.number,
      blockHash: block.hash,
      deployedAt: new Date(block.timestamp * 1000),
      source,
    })
    for (const log of block.logs) {
      const topic0 = log.topics[0]?.toLowerCase()
      const emitter = toLowerAddress(log.address)
      if (topic0 === ACCOUNT_DEPLOYED_TOPIC && eps.has(emitter)) {
        // AccountDeployed(bytes32 indexed userOpHash, address indexed sender, address, address).
        // Only a configured EntryPoint counts, but that is an operator's setting, not a guarantee.
        const sender = log.topics.length === 3 ? topicAddress(log.topics[2]) : null
        if (!sender) {
          const reason = `${log.topics.length} topics or a sender topic that is not an address`
          this.onSkippedLog({
            network: block.network,
            blockNumber: block.number,
            log,
            event: 'AccountDeployed',
            reason,
          })
          continue
        }
        if (!found.has(sender)) found.set(sender, deployment(sender, log.txHash, 'entrypoint'))
      } else if (topic0 === UPGRADED_TOPIC && !proxies.has(emitter)) {
        proxies.set(emitter, log.txHash)
      }
    }
    const candidates = [...proxies.keys()].filter((a) => !found.has(a))
    if (candidates.length > 0) {
      const known = await knownWallets(trx, block.network, candidates)
      for (const [a, txHash] of proxies) if (known.has(a)) found.set(a, deployment(a, txHash, 'proxy'))
    }
    await saveDeployments(trx, [...found.values()])
  }

  async onRollback(trx: DbTransaction, network: string, ancestor: bigint): Promise<void> {
    await rollbackDeployments(trx, network, ancestor)
  }
}
