import { afterAll, beforeAll, expect, it } from 'vitest'
import { nftBalanceRows, tokenHolderRows, tokenTransferRows } from '../../test/fixtures/indexer/rows.ts'
import { anvilNetwork } from '../../test/helpers/halyard.ts'
import { describeEachStorage } from '../../test/helpers/storage.ts'
import { until } from '../../test/helpers/until.ts'
import { NetworkRegistry } from '../chains/registry.ts'
import { type AnvilProcess, startAnvil } from '../devnet/anvil.ts'
import { DEV_ACCOUNT, Devnet } from '../devnet/demo.ts'
import { createLogger } from '../logger.ts'
import type { Storage } from '../storage/database.ts'
import type { Address, Hash } from '../types.ts'
import { IndexerService } from './service.ts'
import type { BlockConsumer, IndexedBlock } from './types.ts'

const ALICE = '0x00000000000000000000000000000000000a11ce' as Address
const BOB = '0x0000000000000000000000000000000000000b0b' as Address
const CAROL = '0x00000000000000000000000000000000000ca201' as Address

describeEachStorage('indexer on $name', (backend) => {
  let anvil: AnvilProcess
  let storage: Storage
  let networks: NetworkRegistry
  let dev: Devnet
  let indexer: IndexerService
  const seen: IndexedBlock[] = []
  const rollbacks: bigint[] = []

  const head = async () => BigInt(await dev.rpc<string>('eth_blockNumber'))
  const indexedTo = async (n: bigint) => indexer.waitForBlock('ethereum-devnet', n, 20_000)
  const nftHolders = async (contract: Address, id: bigint) =>
    (await nftBalanceRows(storage.db))
      .filter((r) => r.contract === contract && r.token_id === id.toString())
      .map((r) => `${r.holder}:${r.balance}`)

  beforeAll(async () => {
    anvil = await startAnvil()
    storage = await backend.open()
    dev = new Devnet(anvil.url)
    const consumer: BlockConsumer = {
      name: 'test-recorder',
      async onBlock(_trx, block) {
        seen.push(block)
      },
      async onRollback(_trx, _network, ancestor) {
        rollbacks.push(ancestor)
      },
    }
    networks = new NetworkRegistry([anvilNetwork(anvil)])
    indexer = new IndexerService({ storage, networks, logger: createLogger('silent') })
    indexer.addConsumer(consumer)
    indexer.start()
    expect(() => indexer.addConsumer(consumer)).toThrow(/after the indexer started/)
  })
  afterAll(async () => {
    await indexer?.stop()
    await networks?.close()
    await storage?.close()
    await anvil?.stop()
  })

  it('stores ERC-20, ERC-721 and ERC-1155 (single and batch) transfers with their positions', async () => {
    const token = await dev.deploy('DemoERC20', ['T', 'T', 18])
    const nft = await dev.deploy('DemoERC721', ['N', 'N'])
    const multi = await dev.deploy('DemoERC1155', ['x/{id}', 'M', 'M'])
    const t1 = await dev.send('DemoERC20', token, 'mint', [ALICE, 500n])
    await dev.send('DemoERC721', nft, 'mint', [ALICE, 7n, ''])
    await dev.send('DemoERC1155', multi, 'mint', [ALICE, 1n, 5n])
    await dev.send('DemoERC1155', multi, 'mintBatch', [BOB, [1n, 2n, 3n], [10n, 20n, 30n]])
    await indexedTo(await head())

    const rows = await tokenTransferRows(storage.db)
    const erc20 = rows.filter((r) => r.contract === token)
    expect(erc20).toHaveLength(1)
    expect(erc20[0]).toMatchObject({
      standard: 'ERC20',
      to_address: ALICE,
      value: '500',
      tx_hash: t1,
      token_id: null,
    })
    expect(rows.filter((r) => r.contract === nft)).toMatchObject([
      { standard: 'ERC721', token_id: '7', value: '1' },
    ])
    const batch = rows.filter((r) => r.contract === multi && r.to_address === BOB)
    expect(batch.map((r) => [r.token_id, r.value, r.batch_index])).toEqual([
      ['1', '10', 0],
      ['2', '20', 1],
      ['3', '30', 2],
    ])
    expect(await nftHolders(multi, 1n)).toEqual([`${BOB}:10`, `${ALICE}:5`])
    const holders = (await tokenHolderRows(storage.db)).filter((h) => h.contract === token)
    expect(holders.map((h) => h.holder)).toEqual([ALICE])

    // Consumers saw every block in order, with full transactions while following the head.
    const numbers = seen.map((b) => b.number)
    expect(numbers).toEqual([...numbers].sort((a, b) => (a < b ? -1 : 1)))
    const withMint = seen.find((b) => b.transfers.some((t) => t.txHash === t1))
    expect(withMint?.transactions?.map((t) => t.hash)).toContain(t1)
    expect(withMint?.logs.length).toBeGreaterThan(0)
  })

  it('moves ERC-721 ownership and sees native value transfers in block transactions', async () => {
    const nft = await dev.deploy('DemoERC721', ['N2', 'N2'])
    await dev.send('DemoERC721', nft, 'mint', [DEV_ACCOUNT, 1n, ''])
    await indexedTo(await head())
    expect(await nftHolders(nft, 1n)).toEqual([`${DEV_ACCOUNT}:1`])
    await dev.send('DemoERC721', nft, 'transferFrom', [DEV_ACCOUNT, CAROL, 1n])
    const valueTx = (await dev.rpc('eth_sendTransaction', [
      { from: DEV_ACCOUNT, to: BOB, value: '0xde0b6b3a7640000' },
    ])) as Hash
    // eth_sendTransaction can answer before the block is mined: wait for it, then for the index.
    const mined = await dev.client.waitForTransactionReceipt({ hash: valueTx, pollingInterval: 20 })
    await indexedTo(mined.blockNumber)
    expect(await nftHolders(nft, 1n)).toEqual([`${CAROL}:1`])
    const tx = seen.flatMap((b) => b.transactions ?? []).find((t) => t.hash === valueTx)
    expect(tx).toMatchObject({ from: DEV_ACCOUNT, to: BOB, value: 10n ** 18n })
  })

  it('rolls back a reorg (anvil_reorg) to the common ancestor and indexes the new chain', async () => {
    const token = await dev.deploy('DemoERC20', ['R', 'R', 18])
    const nft = await dev.deploy('DemoERC721', ['R7', 'R7'])
    await dev.send('DemoERC721', nft, 'mint', [DEV_ACCOUNT, 9n, ''])
    const base = await head()
    await indexedTo(base)
    // Two blocks on the old chain: 9 goes to ALICE, 100 R minted to ALICE.
    await dev.send('DemoERC721', nft, 'transferFrom', [DEV_ACCOUNT, ALICE, 9n])
    await dev.send('DemoERC20', token, 'mint', [ALICE, 100n])
    await indexedTo(base + 2n)
    expect(await nftHolders(nft, 9n)).toEqual([`${ALICE}:1`])
    const oldHash = (await indexer.cursor('ethereum-devnet'))?.hash

    // Replace both blocks: on the new chain 9 goes to CAROL and nothing is minted.
    const art = (await import('../devnet/demo.ts')).demoArtifact('DemoERC721')
    const { encodeFunctionData } = await import('viem')
    const data = encodeFunctionData({
      abi: art.abi,
      functionName: 'transferFrom',
      args: [DEV_ACCOUNT, CAROL, 9n],
    })
    await dev.rpc('anvil_reorg', [2, [[{ from: DEV_ACCOUNT, to: nft, data, gas: '0x100000' }, 0]]])
    const newHead = await dev.client.getBlock({ blockTag: 'latest' })
    expect(newHead.hash).not.toBe(oldHash)
    await until(
      'cursor on the new chain',
      async () => (await indexer.cursor('ethereum-devnet'))?.hash === newHead.hash,
    )

    expect(rollbacks).toContain(base)
    expect(await nftHolders(nft, 9n)).toEqual([`${CAROL}:1`])
    const minted = (await tokenTransferRows(storage.db)).filter((r) => r.contract === token)
    expect(minted).toEqual([])
    const holders = (await tokenHolderRows(storage.db)).filter((h) => h.contract === token)
    expect(holders).toEqual([])
    const stored = await storage.db
      .selectFrom('indexer_blocks')
      .select(['number', 'hash'])
      .where('number', '=', newHead.number.toString())
      .executeTakeFirst()
    expect(stored?.hash).toBe(newHead.hash)
  })
})
