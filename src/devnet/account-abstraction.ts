import { existsSync, readFileSync, writeFileSync } from 'node:fs'
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
import { paymasterSignerKeyFile } from '../gas/paymaster-key.ts'
import { type Address, type Hash, type Hex, toLowerAddress } from '../types.ts'
import { DEV_ACCOUNT } from './demo.ts'
import { rpc } from './multicall3.ts'

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
  /** The VerifyingPaymaster v0.6 (same signer), for sponsoring v0.6 UserOperations. */
  paymasterV06: Address
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
 * the key in the data dir. The VerifyingPaymaster v0.6 (same signer and owner) is deployed by a
 * later transaction of that key and found again among the key's CREATE addresses. Both are
 * staked and funded at their EntryPoint. Afterwards everything is verified by reading code and
 * calling it.
 */
export async function ensureAccountAbstraction(
  rpcUrl: string,
  dataDir: string,
): Promise<AccountAbstractionDeployment> {
  const client = createPublicClient({ transport: http(rpcUrl) })
  const dev = createWalletClient({ transport: http(rpcUrl), account: DEV_ACCOUNT })
  const changed: string[] = []
  const addr = (a: Address) => toLowerAddress(a)
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
  await waitAll(client, rpcUrl, pending)
  changed.push(...pending.map((p) => p.name))

  const paymaster = await ensurePaymasters(client, rpcUrl, dataDir, changed)
  const config: DevAccountAbstraction = {
    entryPoints: { v06: ENTRY_POINT_V06, v07: ENTRY_POINT_V07 },
    simpleAccountFactory: {
      v06: at.get('SimpleAccountFactory v0.6') as Address,
      v07: at.get('SimpleAccountFactory v0.7') as Address,
    },
    paymaster: paymaster.address,
  }
  await verify(client, config, paymaster.signer, paymaster.v06)
  return { config, paymasterSigner: paymaster.signer, paymasterV06: paymaster.v06, changed }
}

async function ensurePaymasters(client: PublicClient, rpcUrl: string, dataDir: string, changed: string[]) {
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
  const signer = toLowerAddress(account.address)
  const wallet = createWalletClient({ transport: http(rpcUrl), account })
  const chainId = await client.getChainId()
  const chain = {
    id: chainId,
    name: 'devnet',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  }
  const address = toLowerAddress(getContractAddress({ from: signer, nonce: 0n }))

  const balance = await client.getBalance({ address: signer })
  if (balance < 2n * (PAYMASTER_DEPOSIT + PAYMASTER_STAKE) + parseEther('1')) {
    await rpc(rpcUrl, 'anvil_setBalance', [signer, `0x${SIGNER_FUNDING.toString(16)}`])
    changed.push('paymaster signer funding')
  }
  const deploy = async (version: EntryPointVersion, entryPoint: Address) => {
    const data = concat([
      artifact(version, 'VerifyingPaymaster').bytecode,
      encodeAbiParameters([{ type: 'address' }, { type: 'address' }], [entryPoint, signer]),
    ])
    const hash = await wallet.sendTransaction({ data, gas: 5_000_000n, chain })
    const name = `VerifyingPaymaster ${version === 'v06' ? 'v0.6' : 'v0.7'}`
    await waitAll(client, rpcUrl, [{ name, hash }])
    changed.push(name)
    const r = await client.getTransactionReceipt({ hash })
    return (r.contractAddress ?? '').toLowerCase() as Address
  }
  if (!(await hasCode(client, address))) {
    const nonce = await client.getTransactionCount({ address: signer })
    if (nonce !== 0)
      throw new Error(
        `the paymaster signer ${signer} has sent ${nonce} transactions but ${address} holds no paymaster: ` +
          `the devnet state and ${keyFile} come from different runs (remove one of them)`,
      )
    await deploy('v07', ENTRY_POINT_V07)
  }
  const v06 = (await findPaymasterV06(client, signer)) ?? (await deploy('v06', ENTRY_POINT_V06))
  const txs: { name: string; hash: Hash }[] = []
  for (const [name, ep, pm] of [
    ['paymaster', ENTRY_POINT_V07, address],
    ['v0.6 paymaster', ENTRY_POINT_V06, v06],
  ] as const) {
    const info = await client.readContract({
      address: ep,
      abi: entryPointAbi,
      functionName: 'getDepositInfo',
      args: [pm],
    })
    if (!info.staked) {
      const data = encodeFunctionData({
        abi: verifyingPaymasterAbi,
        functionName: 'addStake',
        args: [PAYMASTER_UNSTAKE_DELAY_SEC],
      })
      txs.push({
        name: `${name} stake`,
        hash: await wallet.sendTransaction({ to: pm, data, value: PAYMASTER_STAKE, gas: 500_000n, chain }),
      })
    }
    if (info.deposit < MIN_PAYMASTER_DEPOSIT) {
      const data = encodeFunctionData({ abi: verifyingPaymasterAbi, functionName: 'deposit' })
      txs.push({
        name: `${name} deposit`,
        hash: await wallet.sendTransaction({ to: pm, data, value: PAYMASTER_DEPOSIT, gas: 500_000n, chain }),
      })
    }
  }
  await waitAll(client, rpcUrl, txs)
  changed.push(...txs.map((t) => t.name))
  return { address, signer, v06 }
}

/**
 * The VerifyingPaymaster v0.6 `signer` deployed on this devnet: the contract among the key's
 * CREATE addresses whose EntryPoint is v0.6 and whose signer is `signer`; null when none is.
 */
export async function findPaymasterV06(client: PublicClient, signer: Address): Promise<Address | null> {
  const sent = await client.getTransactionCount({ address: signer })
  const candidates = Array.from({ length: sent }, (_, i) =>
    toLowerAddress(getContractAddress({ from: signer, nonce: BigInt(i) })),
  )
  const found = await Promise.all(
    candidates.map(async (a) => {
      if (!(await hasCode(client, a))) return null
      const [ep, s] = await Promise.all([
        client.readContract({ address: a, abi: verifyingPaymasterAbi, functionName: 'entryPoint' }),
        client.readContract({ address: a, abi: verifyingPaymasterAbi, functionName: 'verifyingSigner' }),
      ]).catch(() => [null, null])
      return ep?.toLowerCase() === ENTRY_POINT_V06 && s?.toLowerCase() === signer ? a : null
    }),
  )
  return found.find((a) => a !== null) ?? null
}

/** Reads code and calls each contract; throws naming the first one that is not what it should be. */
async function verify(
  client: PublicClient,
  cfg: AccountAbstractionDeployment['config'],
  signer: Address,
  paymasterV06: Address,
) {
  const probe: Address = '0x000000000000000000000000000000000000dead'
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
  for (const [pm, ep] of [
    [cfg.paymaster, ENTRY_POINT_V07],
    [paymasterV06, ENTRY_POINT_V06],
  ] as const) {
    const pmSigner = await client.readContract({
      address: pm,
      abi: verifyingPaymasterAbi,
      functionName: 'verifyingSigner',
    })
    const pmEntryPoint = await client.readContract({
      address: pm,
      abi: verifyingPaymasterAbi,
      functionName: 'entryPoint',
    })
    if (pmSigner.toLowerCase() !== signer || pmEntryPoint.toLowerCase() !== ep)
      throw new Error(`VerifyingPaymaster ${pm} has signer ${pmSigner} and entry point ${pmEntryPoint}`)
    const info = await client.readContract({
      address: ep,
      abi: entryPointAbi,
      functionName: 'getDepositInfo',
      args: [pm],
    })
    if (!info.staked || info.deposit < MIN_PAYMASTER_DEPOSIT)
      throw new Error(`VerifyingPaymaster ${pm} is not staked and funded at the EntryPoint ${ep}`)
  }
}

async function hasCode(client: PublicClient, address: Address): Promise<boolean> {
  const code = await client.getCode({ address })
  return code !== undefined && code !== '0x'
}

async function waitAll(client: PublicClient, rpcUrl: string, txs: { name: string; hash: Hash }[]) {
  // The dev chain mines a block a second: mining now spares each of the three rounds of
  // deployments up to a second (the first start's time, bench:footprint). On an automining node this adds
  // one empty block.
  if (txs.length > 0) await rpc(rpcUrl, 'evm_mine', [])
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
