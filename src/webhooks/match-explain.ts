import type { EventType, WebhookConfig } from './config.ts'

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** The first of `names` that is a string in `data`, lowercased (form A is snake_case, form B camelCase). */
function pick(data: Record<string, unknown>, ...names: string[]): string | undefined {
  for (const n of names) {
    const v = data[n]
    if (typeof v === 'string') return v.toLowerCase()
  }
  return undefined
}

/**
 * Which of the webhook's filters an event satisfies, each as "filter: why", so an account holder
 * can tell why an event reached them. Worked out from the event's payload against the webhook's
 * filters as they are now: the matcher keeps no record of it, and the payload carries every
 * value a filter tests (addresses, contract, value, transaction hash, log topics).
 */
export function explainMatch(
  cfg: WebhookConfig,
  eventType: string,
  body: unknown,
): { test: boolean; reasons: string[] } {
  const b = isObj(body) ? body : {}
  if (b.test === true) return { test: true, reasons: [] }
  const data = isObj(b.data) ? b.data : {}
  const token = isObj(data.token) ? data.token : {}
  const from = pick(data, 'from', 'fromAddress')
  const to = pick(data, 'to', 'toAddress')
  const contract = pick(data, 'contract', 'contractAddress') ?? pick(token, 'address')
  const value = pick(data, 'value')
  const out: string[] = []
  const has = (list: readonly string[] | undefined, v: string | undefined) =>
    v !== undefined && (list ?? []).some((x) => x.toLowerCase() === v)
  switch (eventType as EventType) {
    case 'mined_transaction': {
      const tx = pick(data, 'tx_hash', 'transactionHash', 'hash')
      if (has(cfg.tx_hashes, tx)) out.push(`tx_hashes: lists ${tx}`)
      break
    }
    case 'log': {
      const emitter = pick(data, 'address')
      if (has(cfg.addresses, emitter)) out.push(`addresses: ${emitter} emitted the log`)
      const topics = Array.isArray(data.topics) ? data.topics : []
      cfg.topics?.forEach((slot, i) => {
        if (slot !== null && typeof topics[i] === 'string')
          out.push(
            `topics[${i}]: ${String(topics[i])} is ${Array.isArray(slot) ? 'one of the listed' : 'the'} topic`,
          )
      })
      if (!cfg.addresses?.length && !cfg.topics?.some((t) => t !== null))
        out.push('no filter: every log of the chain')
      break
    }
    case 'new_block':
      out.push('new_block: every new block is reported (it has no filter)')
      break
    default: {
      if (has(cfg.contracts, contract)) out.push(`contracts: lists the token contract ${contract}`)
      const side = cfg.address_match ?? 'either'
      if (side !== 'to' && has(cfg.addresses, from)) out.push(`addresses: ${from} is the sender (from)`)
      if (side !== 'from' && has(cfg.addresses, to)) out.push(`addresses: ${to} is the recipient (to)`)
      const perContract = contract === undefined ? undefined : cfg.min_value_per_contract?.[contract]
      if (perContract !== undefined) out.push(`min_value_per_contract: ${value ?? '?'} ≥ ${perContract}`)
      else if (cfg.min_value !== undefined) out.push(`min_value: ${value ?? '?'} ≥ ${cfg.min_value}`)
      if (cfg.selectors?.length)
        out.push(`selectors: the transaction calls one of ${cfg.selectors.join(', ')}`)
      if (!cfg.addresses?.length && !cfg.contracts?.length)
        out.push(`no address or contract filter: every ${eventType} event of the chain`)
    }
  }
  return { test: false, reasons: out }
}
