import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import {
  concat,
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  encodeFunctionData,
  getContractAddress,
  http,
  type PublicClient,
  parseEther,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { factoryImplementation, simpleAccountAddress } from '../aa/account-address.ts'
import type { AccountAbstractionConfig } from '../aa/config.ts'
import {
  artifact,
  DETERMINISTIC_DEPLOYER,
  ENTRY_POINT_V06,
  ENTRY_POINT_V07,
  ENTRY_POINT_V07_SALT,
  type EntryPointVersion,
  entryPointAbi,
  simpleAccountFactoryAbi,
  verifyingPaymasterAbi,
  ZERO_SALT,
} from '../aa/contracts.ts'
import type { Address, Hash, Hex } from '../types.ts'
import { DEV_ACCOUNT } from './demo.ts'
import { rpc } from './multicall3.ts'

/** The VerifyingPaymaster's signer (and owner) key, kept in the data dir, mode 0600. */
export const paymasterSignerKeyFile = (dataDir: string) => path.join(dataDir, 'paymaster-signer.key')

/** Stake and deposit the dev paymaster keeps at the EntryPoint (bundlers require a staked paymaster). */
const PAYMASTER_STAKE = parseEther('1')
const PAYMASTER_UNSTAKE_DELAY_SEC = 86_400
const PAYMASTER_DEPOSIT = parseEther('10')
const MIN_PAYMASTER_DEPOSIT = parseEther('1')
const SIGNER_FUNDING = parseEther('100')

/** Every address dev mode deploys; assignable to the network config's `accountAbstraction`. */
export interface DevAccountAbstraction extends AccountAbstractionConfig {
  entryPoints: { v06: Address; v07: Address }
  simpleAccountFactory: { v06: Address; v07: Address }
  paymaster: Address
}

export interface AccountAbstractionDeployment {
  /** Addresses for the network config (`accountAbstraction`). */
  config: DevAccountAbstraction
  paymasterSigner: Address
  /** What this call had to deploy or top up; empty when everything was already in place. */
  changed: string[]
}

interface DeterministicContract {
  name: string
  version: EntryPointVersion
  artifact: string
  salt: Hex
  args: Hex
  /** Where it must land (canonical address), when there is one. */
  expected?: Address
}

/**
 * Dev mode: puts the ERC-4337 contracts on the devnet, idempotently (anything already there is
 * left alone, so a restart on a kept chain sends no transaction). EntryPoint v0.6/v0.7 and their
 * SimpleAccountFactory go through the deterministic deployer from the pinned npm artifacts and
 * land on their canonical addresses. The VerifyingPaymaster v0.7 is owned by its signer (so the
 * signer can stake it), deployed as that key's first transaction: its address is a function of
 * the key in the data dir. Afterwards everything is verified by reading code and calling it.
 */
export async function ensureAccountAbstraction(
  rpcUrl: string,
  dataDir: string,
): Promise<AccountAbstractionDeployment> {
  const client = createPublicClient({ transport: http(rpcUrl) })
  const dev = createWalletClient({ transport: http(rpcUrl), account: DEV_ACCOUNT })
  const changed: string[] = []
  const addr = (a: Address) => a.toLowerCase() as Address
  const oneArg = (a: Address) => encodeAbiParameters([{ type: 'address' }], [a])

  const contracts: DeterministicContract[] = [
    {
      name: 'EntryPoint v0.6',
      version: 'v06',
      artifact: 'EntryPoint',
      salt: ZERO_SALT,
      args: '0x',
      expected: ENTRY_POINT_V06,
    },
    {
      name: 'EntryPoint v0.7',
      version: 'v07',
      artifact: 'EntryPoint',
      salt: ENTRY_POINT_V07_SALT,
      args: '0x',
      expected: ENTRY_POINT_V07,
    },
    {
      name: 'SimpleAccountFactory v0.6',
      version: 'v06',
      artifact: 'SimpleAccountFactory',
      salt: ZERO_SALT,
      args: oneArg(ENTRY_POINT_V06),
    },
    {
      name: 'SimpleAccountFactory v0.7',
      version: 'v07',
      artifact: 'SimpleAccountFactory',
      salt: ZERO_SALT,
      args: oneArg(ENTRY_POINT_V07),
    },
  ]
  if (!(await hasCode(client, DETERMINISTIC_DEPLOYER)))
    throw new Error(
      `no CREATE2 deployer at ${DETERMINISTIC_DEPLOYER} (anvil pre-deploys it unless told not to)`,
    )
  const at = new Map<string, Address>()
  const pending: { name: string; hash: Hash }[] = []
  for (const c of contracts) {
    const initCode = concat([artifact(c.version, c.artifact).bytecode, c.args])
    const target = addr(
      getContractAddress({
        opcode: 'CREATE2',
        from: DETERMINISTIC_DEPLOYER,
        salt: c.salt,
        bytecode: initCode,
      }),
    )
    if (c.expected && target !== c.expected)
      throw new Error(`${c.name} artifact would land at ${target}, not ${c.expected}`)
    at.set(c.name, target)
    if (await hasCode(client, target)) continue
    // Sent one after the other (anvil numbers the unlocked account's nonces on arrival), mined together.
    const hash = await dev.sendTransaction({
      to: DETERMINISTIC_DEPLOYER,
      data: concat([c.salt, initCode]),
      gas: 10_000_000n,
      chain: null,
    })
    pending.push({ name: c.name, hash })
  }
  await waitAll(client, pending)
  changed.push(...pending.map((p) => p.name))

  const paymaster = await ensurePaymaster(client, rpcUrl, dataDir, changed)
  const config: DevAccountAbstraction = {
    entryPoints: { v06: ENTRY_POINT_V06, v07: ENTRY_POINT_V07 },
    simpleAccountFactory: {
      v06: at.get('SimpleAccountFactory v0.6') as Address,
      v07: at.get('SimpleAccountFactory v0.7') as Address,
    },
    paymaster: paymaster.address,
  }
  await verify(client, config, paymaster.signer)
  return { config, paymasterSigner: paymaster.signer, changed }
}

async function ensurePaymaster(client: PublicClient, rpcUrl: string, dataDir: string, changed: string[]) {
  const keyFile = paymasterSignerKeyFile(dataDir)
  let key: Hex
  if (existsSync(keyFile)) {
    const text = readFileSync(keyFile, 'utf8').trim()
    if (!/^0x[0-9a-f]{64}$/.test(text))
      throw new Error(`${keyFile} does not hold a 0x-prefixed 32-byte hex key`)
    key = text as Hex
  } else {
    key = generatePrivateKey()
    writeFileSync(keyFile, key, { mode: 0o600 })
  }
  const account = privateKeyToAccount(key)
  const signer = account.address.toLowerCase() as Address
  const wallet = createWalletClient({ transport: http(rpcUrl), account })
  const chainId = await client.getChainId()
  const chain = {
    id: chainId,
    name: 'devnet',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  }
  const address = getContractAddress({ from: signer, nonce: 0n }).toLowerCase() as Address

  const balance = await client.getBalance({ address: signer })
  if (balance < PAYMASTER_DEPOSIT + PAYMASTER_STAKE + parseEther('1')) {
    await rpc(rpcUrl, 'anvil_setBalance', [signer, `0x${SIGNER_FUNDING.toString(16)}`])
    changed.push('paymaster signer funding')
  }
  if (!(await hasCode(client, address))) {
    const nonce = await client.getTransactionCount({ address: signer })
    if (nonce !== 0)
      throw new Error(
        `the paymaster signer ${signer} has sent ${nonce} transactions but ${address} holds no paymaster: ` +
          `the devnet state and ${keyFile} come from different runs (remove one of them)`,
      )
    const data = concat([
      artifact('v07', 'VerifyingPaymaster').bytecode,
      encodeAbiParameters([{ type: 'address' }, { type: 'address' }], [ENTRY_POINT_V07, signer]),
    ])
    const hash = await wallet.sendTransaction({ data, gas: 5_000_000n, chain })
    await waitAll(client, [{ name: 'VerifyingPaymaster v0.7', hash }])
    changed.push('VerifyingPaymaster v0.7')
  }
  const info = await client.readContract({
    address: ENTRY_POINT_V07,
    abi: entryPointAbi,
    functionName: 'getDepositInfo',
    args: [address],
  })
  const txs: { name: string; hash: Hash }[] = []
  if (!info.staked) {
    const data = encodeFunctionData({
      abi: verifyingPaymasterAbi,
      functionName: 'addStake',
      args: [PAYMASTER_UNSTAKE_DELAY_SEC],
    })
    txs.push({
      name: 'paymaster stake',
      hash: await wallet.sendTransaction({ to: address, data, value: PAYMASTER_STAKE, gas: 500_000n, chain }),
    })
  }
  if (info.deposit < MIN_PAYMASTER_DEPOSIT) {
    const data = encodeFunctionData({ abi: verifyingPaymasterAbi, functionName: 'deposit' })
    txs.push({
      name: 'paymaster deposit',
      hash: await wallet.sendTransaction({
        to: address,
        data,
        value: PAYMASTER_DEPOSIT,
        gas: 500_000n,
        chain,
      }),
    })
  }
  await waitAll(client, txs)
  changed.push(...txs.map((t) => t.name))
  return { address, signer }
}

/** Reads code and calls each contract; throws naming the first one that is not what it should be. */
async function verify(client: PublicClient, cfg: AccountAbstractionDeployment['config'], signer: Address) {
  const probe = '0x000000000000000000000000000000000000dead' as Address
  for (const ep of [cfg.entryPoints.v06, cfg.entryPoints.v07]) {
    if (!(await hasCode(client, ep))) throw new Error(`no EntryPoint code at ${ep}`)
    await client.readContract({
      address: ep,
      abi: entryPointAbi,
      functionName: 'getNonce',
      args: [probe, 0n],
    })
  }
  for (const f of [cfg.simpleAccountFactory.v06, cfg.simpleAccountFactory.v07]) {
    const impl = await client.readContract({
      address: f,
      abi: simpleAccountFactoryAbi,
      functionName: 'accountImplementation',
    })
    if (impl.toLowerCase() !== factoryImplementation(f))
      throw new Error(`SimpleAccountFactory ${f} has an unexpected implementation ${impl}`)
  }
  const f7 = cfg.simpleAccountFactory.v07
  const onChain = await client.readContract({
    address: f7,
    abi: simpleAccountFactoryAbi,
    functionName: 'getAddress',
    args: [probe, 7n],
  })
  if (onChain.toLowerCase() !== simpleAccountAddress(f7, probe, 7n))
    throw new Error(`SimpleAccountFactory ${f7}: local address derivation disagrees with getAddress`)
  const pmSigner = await client.readContract({
    address: cfg.paymaster,
    abi: verifyingPaymasterAbi,
    functionName: 'verifyingSigner',
  })
  const pmEntryPoint = await client.readContract({
    address: cfg.paymaster,
    abi: verifyingPaymasterAbi,
    functionName: 'entryPoint',
  })
  if (pmSigner.toLowerCase() !== signer || pmEntryPoint.toLowerCase() !== ENTRY_POINT_V07)
    throw new Error(
      `VerifyingPaymaster ${cfg.paymaster} has signer ${pmSigner} and entry point ${pmEntryPoint}`,
    )
  const info = await client.readContract({
    address: ENTRY_POINT_V07,
    abi: entryPointAbi,
    functionName: 'getDepositInfo',
    args: [cfg.paymaster],
  })
  if (!info.staked || info.deposit < MIN_PAYMASTER_DEPOSIT)
    throw new Error(`VerifyingPaymaster ${cfg.paymaster} is not staked and funded at the EntryPoint`)
}

async function hasCode(client: PublicClient, address: Address): Promise<boolean> {
  const code = await client.getCode({ address })
  return code !== undefined && code !== '0x'
}

async function waitAll(client: PublicClient, txs: { name: string; hash: Hash }[]) {
  await Promise.all(
    txs.map(async (t) => {
      const r = await client.waitForTransactionReceipt({
        hash: t.hash,
        pollingInterval: 100,
        timeout: 60_000,
      })
      if (r.status !== 'success') throw new Error(`devnet deployment of ${t.name} reverted (${t.hash})`)
    }),
  )
}
