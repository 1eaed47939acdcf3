/**
 * bench:bundler's load: the same stream of valid v0.7 ops for each bundler under test, driven
 * over its JSON-RPC URL as a client would (Halyard's with an API key header).
 *   estimate   eth_estimateUserOperationGas per op (stub signature), then signed with exactly
 *              those limits — all before the clock starts, so client-side signing is not measured
 *   accept     all ops sent with `concurrency` requests in flight: accepted ops/s
 *   inclusion  per op, send → first eth_getUserOperationReceipt (polled every POLL_MS): p50 / p99
 *   accuracy   used gas (actualGasUsed) / estimated gas (the limits plus preVerificationGas),
 *              median and range, and how many landed with the estimate
 */
import { toSimpleSmartAccount } from 'permissionless/accounts'
import { createPublicClient, encodeFunctionData, http, parseAbi, toHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { DEV_ACCOUNT } from '../../src/devnet/demo.ts'
import { rpc } from '../../src/devnet/multicall3.ts'
import type { Address, Hex } from '../../src/types.ts'

const POLL_MS = 25
const factoryAbi = parseAbi(['function createAccount(address owner, uint256 salt) returns (address)'])
const tokenless = '0x000000000000000000000000000000000000beef' as Address

/** A bundler's JSON-RPC URL and the headers a client sends it (Halyard: the API key). */
export interface Target {
  url: string
  headers?: Record<string, string>
}

export interface Row {
  name: string
  acceptedPerSec: number
  accepted: number
  p50: number
  p99: number
  ratioMedian: number
  ratioMin: number
  ratioMax: number
  landed: number
  /** The accept phase on the monotonic clock, µs (a child's CPU profile cut to it). */
  acceptWindow?: { from: number; to: number }
  note?: string
}

export const missingRow = (name: string, note: string): Row => ({
  name,
  acceptedPerSec: Number.NaN,
  accepted: 0,
  p50: Number.NaN,
  p99: Number.NaN,
  ratioMedian: Number.NaN,
  ratioMin: Number.NaN,
  ratioMax: Number.NaN,
  landed: 0,
  note,
})

export async function jsonRpc(t: Target, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(t.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...t.headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const text = await res.text()
  let body: { result?: unknown; error?: { code: number | string; message: string } }
  try {
    body = JSON.parse(text) as typeof body
  } catch {
    throw new Error(`${method}: HTTP ${res.status} ${text.slice(0, 200)}`)
  }
  if (body.error) throw new Error(`${method}: ${body.error.code} ${body.error.message}`)
  if (!res.ok) throw new Error(`${method}: HTTP ${res.status} ${text.slice(0, 200)}`)
  return body.result
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? Number.NaN : (s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number)
}

/** `count` owners whose SimpleAccounts (v0.7) the factory deploys directly, funded. */
async function deployedAccounts(anvilUrl: string, factory: Address, entryPoint: Address, count: number) {
  const client = createPublicClient({ transport: http(anvilUrl) })
  const accounts = []
  for (let i = 0; i < count; i++) {
    const owner = privateKeyToAccount(generatePrivateKey())
    const account = await toSimpleSmartAccount({
      client,
      owner,
      factoryAddress: factory,
      entryPoint: { address: entryPoint, version: '0.7' },
    })
    const data = encodeFunctionData({
      abi: factoryAbi,
      functionName: 'createAccount',
      args: [owner.address, 0n],
    })
    await rpc(anvilUrl, 'eth_sendTransaction', [{ from: DEV_ACCOUNT, to: factory, data, gas: '0x100000' }])
    await rpc(anvilUrl, 'anvil_setBalance', [await account.getAddress(), toHex(10n ** 18n)])
    accounts.push(account)
  }
  return { client, accounts }
}

export interface LoadSpec {
  anvilUrl: string
  factory: Address
  entryPoint: Address
  ops: number
  concurrency: number
}

/** One row: fresh accounts, their ops estimated and signed, then sent and followed to receipts. */
export async function runLoad(name: string, t: Target, spec: LoadSpec): Promise<Row> {
  const ep = spec.entryPoint
  const { client, accounts } = await deployedAccounts(spec.anvilUrl, spec.factory, ep, spec.ops)
  const block = await client.getBlock()
  const tip = 2_000_000_000n
  const fees = { maxFeePerGas: (block.baseFeePerGas ?? 0n) * 3n + tip, maxPriorityFeePerGas: tip }
  const signed: { op: Record<string, unknown>; estimated: bigint }[] = []
  for (const account of accounts) {
    const base = {
      sender: await account.getAddress(),
      nonce: toHex(await account.getNonce({ key: 0n })),
      callData: await account.encodeCalls([{ to: tokenless, value: 1n, data: '0x' }]),
      maxFeePerGas: toHex(fees.maxFeePerGas),
      maxPriorityFeePerGas: toHex(fees.maxPriorityFeePerGas),
      signature: await account.getStubSignature(),
    }
    const est = (await jsonRpc(t, 'eth_estimateUserOperationGas', [base, ep])) as Record<string, Hex>
    const gas = {
      callGasLimit: BigInt(est.callGasLimit as Hex),
      verificationGasLimit: BigInt(est.verificationGasLimit as Hex),
      preVerificationGas: BigInt(est.preVerificationGas as Hex),
    }
    const signature = await account.signUserOperation({
      sender: base.sender,
      nonce: BigInt(base.nonce),
      callData: base.callData,
      ...gas,
      ...fees,
      signature: '0x',
    })
    signed.push({
      op: {
        ...base,
        callGasLimit: toHex(gas.callGasLimit),
        verificationGasLimit: toHex(gas.verificationGasLimit),
        preVerificationGas: toHex(gas.preVerificationGas),
        signature,
      },
      estimated: gas.callGasLimit + gas.verificationGasLimit + gas.preVerificationGas,
    })
  }

  // Accept: all ops, `concurrency` in flight; then each op's receipt, polled.
  const sentAt: number[] = []
  const hashes: (Hex | null)[] = []
  const errors: string[] = []
  const start = performance.now()
  const fromUs = Number(process.hrtime.bigint() / 1000n)
  let next = 0
  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      for (let i = next++; i < signed.length; i = next++) {
        sentAt[i] = performance.now()
        try {
          hashes[i] = (await jsonRpc(t, 'eth_sendUserOperation', [signed[i]?.op, ep])) as Hex
        } catch (err) {
          hashes[i] = null
          errors.push((err as Error).message)
        }
      }
    }),
  )
  const acceptSeconds = (performance.now() - start) / 1000
  const acceptWindow = { from: fromUs, to: Number(process.hrtime.bigint() / 1000n) }
  const latencies: number[] = []
  const ratios: number[] = []
  let landed = 0
  await Promise.all(
    hashes.map(async (h, i) => {
      if (!h) return
      for (let n = 0; n < 60_000 / POLL_MS; n++) {
        const r = (await jsonRpc(t, 'eth_getUserOperationReceipt', [h]).catch(() => null)) as {
          success: boolean
          actualGasUsed: Hex
        } | null
        if (r) {
          latencies.push(performance.now() - (sentAt[i] as number))
          if (r.success) landed++
          ratios.push(Number(BigInt(r.actualGasUsed)) / Number(signed[i]?.estimated))
          return
        }
        await new Promise((res) => setTimeout(res, POLL_MS))
      }
    }),
  )
  const accepted = hashes.filter(Boolean).length
  return {
    name,
    acceptedPerSec: accepted / acceptSeconds,
    accepted,
    p50: pct(latencies, 50),
    p99: pct(latencies, 99),
    ratioMedian: pct(ratios, 50),
    ratioMin: Math.min(...ratios),
    ratioMax: Math.max(...ratios),
    landed,
    acceptWindow,
    ...(errors.length > 0 ? { note: `${errors.length} refused, e.g. ${errors[0]?.slice(0, 160)}` } : {}),
  }
}
