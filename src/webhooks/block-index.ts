import type { IndexedBlock, IndexedLog, IndexedTransaction, TokenTransfer } from '../indexer/types.ts'

/** A block's items by the keys the match index uses (address, contract, tx hash, log address). */
export class BlockIndex {
  private readonly txByAddr = new Map<string, IndexedTransaction[]>()
  private readonly txByHash = new Map<string, IndexedTransaction[]>()
  private readonly transfersByAddr = new Map<string, TokenTransfer[]>()
  private readonly transfersByContract = new Map<string, TokenTransfer[]>()
  private readonly logsByAddr = new Map<string, IndexedLog[]>()

  constructor(
    private readonly block: IndexedBlock,
    private readonly txs: IndexedTransaction[],
  ) {
    const add = <T>(map: Map<string, T[]>, key: string, item: T) => {
      const list = map.get(key)
      if (list) list.push(item)
      else map.set(key, [item])
    }
    for (const t of txs) {
      add(this.txByAddr, t.from, t)
      if (t.to && t.to !== t.from) add(this.txByAddr, t.to, t)
      add(this.txByHash, t.hash, t)
    }
    for (const t of block.transfers) {
      add(this.transfersByAddr, t.from, t)
      if (t.to !== t.from) add(this.transfersByAddr, t.to, t)
      add(this.transfersByContract, t.contract, t)
    }
    for (const l of block.logs) add(this.logsByAddr, l.address, l)
  }

  /** The items a webhook's matched index keys can possibly concern (its filter runs after). */
  narrow(hits: ReadonlyArray<{ kind: string; key: string }>) {
    if (hits.some((h) => h.kind === 'any')) {
      return { txs: this.txs, transfers: this.block.transfers, logs: this.block.logs }
    }
    const txs = new Set<IndexedTransaction>()
    const transfers = new Set<TokenTransfer>()
    const logs = new Set<IndexedLog>()
    const addAll = <T>(into: Set<T>, list: T[] | undefined) => {
      if (list) for (const item of list) into.add(item)
    }
    for (const { kind, key } of hits) {
      if (kind === 'addr') {
        addAll(txs, this.txByAddr.get(key))
        addAll(transfers, this.transfersByAddr.get(key))
      } else if (kind === 'contract') addAll(transfers, this.transfersByContract.get(key))
      else if (kind === 'tx') addAll(txs, this.txByHash.get(key))
      else if (kind === 'log_addr') addAll(logs, this.logsByAddr.get(key))
    }
    return { txs: [...txs], transfers: [...transfers], logs: [...logs] }
  }
}
