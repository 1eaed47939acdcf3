import { concat, getContractAddress, keccak256, size } from 'viem'
import { DETERMINISTIC_DEPLOYER, ZERO_SALT } from '../aa/contracts.ts'
import type { Logger } from '../logger.ts'
import { type Address, type Hex, toLowerAddress } from '../types.ts'
import type { BundlerChain } from './chain.ts'
import { entryPointSimulationsCode } from './entrypoint.ts'
import type { Executor } from './executor.ts'

/**
 * EntryPointSimulations (v0.7) as deployed code, so a simulation's `eth_call` carries a 45-byte
 * override instead of the contract's 21 kB runtime code (42 kB of hex on every call, sent,
 * parsed and analysed by the node each time).
 *
 * The runtime code is deployed once per network through the deterministic deployer
 * (CREATE2, salt 0) with an init code that only copies it: no constructor runs (the artifact's
 * refuses past block 100), so every network and every Halyard instance finds it at the same
 * address. A simulation then overrides the EntryPoint's code with a minimal EIP-1167 proxy that
 * delegates to it: the simulation code runs with the EntryPoint's address and storage exactly as
 * with the full override, including the calls it makes to `address(this)`
 * (_validateSenderAndPaymaster, innerHandleOp) and the account's prefund payment. Each call into
 * the EntryPoint costs the proxy hop (~150 gas): simulations are that much more conservative.
 *
 * The ERC-7562 trace keeps the full override: its tracer reads the EntryPoint's frame at depth 1.
 */

/** Copies the code that follows it and returns it: PUSH2 len DUP1 PUSH1 12 PUSH1 0 CODECOPY PUSH1 0 RETURN. */
function copierInitCode(runtime: Hex): Hex {
  const len = size(runtime)
  if (len > 0xffff) throw new Error('runtime code too large for the copier')
  return concat([`0x61${len.toString(16).padStart(4, '0')}80600c6000396000f3`, runtime])
}

let initCode: Hex | undefined
/** The deterministic deployer's init code for the simulation runtime (no constructor). */
export function simulationsInitCode(): Hex {
  initCode ??= copierInitCode(entryPointSimulationsCode())
  return initCode
}

let address: Address | undefined
/** Where the simulation code lives once deployed: the same on every network. */
export function simulationsAddress(): Address {
  address ??= toLowerAddress(
    getContractAddress({
      opcode: 'CREATE2',
      from: DETERMINISTIC_DEPLOYER,
      salt: ZERO_SALT,
      bytecodeHash: keccak256(simulationsInitCode()),
    }),
  )
  return address
}

/** The simulation code's address when it is deployed there (exactly that code), else null. */
export async function findSimulations(chain: BundlerChain): Promise<Address | null> {
  const at = simulationsAddress()
  const code = await chain.code(at)
  return code.toLowerCase() === entryPointSimulationsCode().toLowerCase() ? at : null
}

export interface DeployOptions {
  /** How long to wait for the deployment's receipt. */
  timeoutMs?: number
  pollMs?: number
}

/**
 * Deploys the simulation code from `executor` (one transaction, ~4.7M gas) unless it is there
 * already; its address, or null when the network cannot take it (no deterministic deployer, the
 * transaction failed or was not mined in time). The caller makes sure no bundle is in flight:
 * the deployment takes the executor's next nonce.
 */
export async function deploySimulations(
  chain: BundlerChain,
  executor: Executor,
  logger: Logger,
  opts: DeployOptions = {},
): Promise<Address | null> {
  const found = await findSimulations(chain)
  if (found) return found
  if ((await chain.code(DETERMINISTIC_DEPLOYER)) === '0x') {
    logger.warn(
      { deployer: DETERMINISTIC_DEPLOYER },
      'bundler: no deterministic deployer on this network; v0.7 simulations carry the EntryPointSimulations code',
    )
    return null
  }
  const data = concat([ZERO_SALT, simulationsInitCode()])
  const tx = { from: executor.address, to: DETERMINISTIC_DEPLOYER, data }
  const est = await chain.estimateGas(tx)
  if (!est.ok || est.gas === undefined) {
    logger.warn(
      { err: est.ok ? 'no estimate' : est.message },
      'bundler: EntryPointSimulations deployment would fail',
    )
    return null
  }
  const head = await chain.block('latest')
  const tip = await chain
    .request<string>('eth_maxPriorityFeePerGas', [])
    .then((v) => BigInt(v))
    .catch(() => 1_000_000_000n)
  const nonce = await chain.transactionCount(executor.address, 'pending')
  const signed = await executor.sign({
    to: DETERMINISTIC_DEPLOYER,
    data,
    gas: (est.gas * 6n) / 5n,
    nonce,
    maxFeePerGas: head.baseFeePerGas * 2n + tip,
    maxPriorityFeePerGas: tip,
  })
  const sent = await chain.sendRaw(signed.raw)
  if (!sent.ok) {
    logger.warn({ err: sent.message }, 'bundler: EntryPointSimulations deployment refused by the node')
    return null
  }
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000)
  while (Date.now() < deadline) {
    const receipt = await chain.receipt(signed.hash)
    if (receipt?.blockNumber) break
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 500))
  }
  const at = await findSimulations(chain)
  if (at) logger.info({ address: at, tx: signed.hash }, 'bundler: EntryPointSimulations deployed')
  else logger.warn({ tx: signed.hash }, 'bundler: EntryPointSimulations deployment did not land (yet)')
  return at
}
