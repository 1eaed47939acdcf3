import { mkdtempSync, readFileSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  createPublicClient,
  decodeFunctionResult,
  encodeFunctionData,
  getContractAddress,
  http,
  keccak256,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { describe, expect, it } from 'vitest'
import { spawnHalyard } from '../../test/helpers/cli.ts'
import { call, postRpc } from '../../test/helpers/halyard.ts'
import { ENTRY_POINT_V06, ENTRY_POINT_V07, entryPointAbi } from '../aa/contracts.ts'
import { paymasterSignerKeyFile } from '../gas/paymaster-key.ts'
import type { Address, Hex } from '../types.ts'
import { findPaymasterV06 } from './account-abstraction.ts'
import { DEV_ACCOUNT } from './demo.ts'
import { MULTICALL3_ADDRESS } from './multicall3.ts'

/** The factories' canonical addresses (what permissionless.js assumes for v0.6 and v0.7). */
const FACTORY_V06 = '0x9406cc6185a346906296840746125a0e44976454'
const FACTORY_V07 = '0x91e60e0613810449d098b0b5ec8b51a0fe8c8985'

describe('dev mode ERC-4337 contracts', () => {
  it('deploys them on the first start and leaves them in place, untouched, across two restarts', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'halyard-dev-aa-'))
    const seen: Record<string, unknown>[] = []
    for (let start = 0; start < 3; start++) {
      const server = spawnHalyard(['dev'], { HALYARD_DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '' })
      try {
        const [, baseUrl] = await server.waitFor(/HTTP base URL:\s+(\S+)/)
        const [, key] = await server.waitFor(/API key:\s+(\S+)/)
        const node = async (method: string, params: unknown[]) => {
          const res = await postRpc(`${baseUrl}/rpc/ethereum/devnet`, key, call(method, params))
          if (!('result' in res.json)) throw new Error(`${method}: ${JSON.stringify(res.json)}`)
          return res.json.result as Hex
        }
        const signer = privateKeyToAccount(
          readFileSync(paymasterSignerKeyFile(dataDir), 'utf8').trim() as Hex,
        )
        const paymaster = getContractAddress({ from: signer.address, nonce: 0n }).toLowerCase() as Address
        const paymasterV06 = await findPaymasterV06(
          createPublicClient({
            transport: http(`${baseUrl}/rpc/ethereum/devnet`, {
              fetchOptions: { headers: { 'x-api-key': key as string } },
            }),
          }),
          signer.address.toLowerCase() as Address,
        )
        expect(paymasterV06).not.toBeNull()
        const codeHashes: Record<string, Hex> = {}
        for (const a of [
          ENTRY_POINT_V06,
          ENTRY_POINT_V07,
          FACTORY_V06,
          FACTORY_V07,
          paymaster,
          paymasterV06 as Address,
          MULTICALL3_ADDRESS,
        ]) {
          const code = await node('eth_getCode', [a, 'latest'])
          expect(code.length, `code at ${a}`).toBeGreaterThan(2)
          codeHashes[a] = keccak256(code)
        }
        const depositInfo = decodeFunctionResult({
          abi: entryPointAbi,
          functionName: 'getDepositInfo',
          data: await node('eth_call', [
            {
              to: ENTRY_POINT_V07,
              data: encodeFunctionData({
                abi: entryPointAbi,
                functionName: 'getDepositInfo',
                args: [paymaster],
              }),
            },
            'latest',
          ]),
        })
        expect(depositInfo.staked).toBe(true)
        const depositInfoV06 = decodeFunctionResult({
          abi: entryPointAbi,
          functionName: 'getDepositInfo',
          data: await node('eth_call', [
            {
              to: ENTRY_POINT_V06,
              data: encodeFunctionData({
                abi: entryPointAbi,
                functionName: 'getDepositInfo',
                args: [paymasterV06 as Address],
              }),
            },
            'latest',
          ]),
        })
        expect(depositInfoV06.staked).toBe(true)
        expect(depositInfoV06.deposit).toBeGreaterThan(0n)
        seen.push({
          codeHashes,
          paymaster,
          paymasterV06,
          // No transaction from the deployers after the first start: nothing was redeployed.
          devAccountNonce: await node('eth_getTransactionCount', [DEV_ACCOUNT, 'latest']),
          signerNonce: await node('eth_getTransactionCount', [signer.address, 'latest']),
          deposit: depositInfo.deposit.toString(),
          stake: depositInfo.stake.toString(),
        })
        // Dev mode's network config names the factory: wallets work out of the box.
        const res = await fetch(`${baseUrl}/wallets/create`, {
          method: 'POST',
          headers: { 'x-api-key': key as string, 'content-type': 'application/json' },
          body: JSON.stringify({ owner: DEV_ACCOUNT, chain: 'ethereum-devnet' }),
        })
        expect(res.status).toBeLessThan(300)
        expect(((await res.json()) as { factory: string }).factory).toBe(FACTORY_V07)
      } finally {
        await server.stop()
      }
    }
    // v0.7 paymaster: deploy, stake, deposit; the same for the v0.6 one.
    expect(seen[0]?.signerNonce).toBe('0x6')
    expect(seen[1]).toEqual(seen[0])
    expect(seen[2]).toEqual(seen[0])
    expect(statSync(paymasterSignerKeyFile(dataDir)).mode & 0o777).toBe(0o600)
  }, 180_000)
})
