import type { Address, Hex } from '../types.ts'
import { compileSol } from './demo-contracts/compile.ts'

/** The address Multicall3 has on most chains (mds1/multicall's deployment list). */
export const MULTICALL3_ADDRESS: Address = '0xca11bde05977b3631167028862be2a173976ca11'

/**
 * Puts Multicall3 at its canonical address on a devnet, once (idempotent: skipped when code is
 * already there). The code is our own Multicall3-compatible contract
 * (demo-contracts/Multicall3.sol, compiled here with solc from npm) installed with
 * `anvil_setCode`: the canonical presigned deployment transaction would be an opaque blob, and
 * a devnet only needs the same ABI at the same address.
 */
export async function ensureMulticall3(rpcUrl: string): Promise<'deployed' | 'present'> {
  const code = (await rpc(rpcUrl, 'eth_getCode', [MULTICALL3_ADDRESS, 'latest'])) as Hex
  if (code && code !== '0x') return 'present'
  const compiled = compileSol('Multicall3.sol').Multicall3
  if (!compiled) throw new Error('Multicall3.sol did not produce a Multicall3 contract')
  await rpc(rpcUrl, 'anvil_setCode', [MULTICALL3_ADDRESS, compiled.deployedBytecode])
  return 'deployed'
}

export async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(30_000),
  })
  const body = (await res.json()) as { result?: unknown; error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
  return body.result
}
