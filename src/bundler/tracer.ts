import { encodeFunctionData, parseAbi } from 'viem'
import { entryPoint06Abi } from 'viem/account-abstraction'
import type { Address, Hex } from '../types.ts'
import type { BundlerChain, StateOverride } from './chain.ts'
import { simulationOverride } from './entrypoint.ts'
import { BundlerError, BundlerErrorCode, type EntryPointRef, type UserOperation } from './types.ts'
import { packV07, v06Struct } from './userop.ts'

/**
 * The ERC-7562 collector: a JavaScript tracer for `debug_traceCall` over the EntryPoint's
 * validation simulation. It splits the trace into one "level" per call the EntryPoint makes at
 * depth 1 (SenderCreator.createSender = factory, validateUserOp = account,
 * validatePaymasterUserOp = paymaster) and records, per level, what the rules look at: banned
 * opcodes, storage slots read and written per contract, code size of every address called or
 * EXTCODE*-read (at the time of access; an EXTCODESIZE right before ISZERO, Solidity's check
 * before a call, is no code read [OP-051]), calls with their value and selector, frames that
 * ran out of gas [OP-020] (from `exit`: the reference bundler's per-step gas < cost test misfires
 * on anvil, whose `getCost()` on a step after a nested call or create can include the callee's
 * gas), except a precompile's frame: a precompile given too little gas runs none of the entity's
 * opcodes out of gas, the call just fails; and,
 * globally, KECCAK256 inputs (to tell a sender's mapping slots from others).
 *
 * Written for anvil's JS tracer as well as geth's: anvil throws on `memory.slice` past the end
 * of memory, and an exception in `step` silently reverts the traced frame (the trace then
 * describes another execution). So every callback catches everything and records the error in
 * the result, memory is only read within its length, and the caller also checks that the traced
 * execution ended as the simulation did.
 */

const TRACER = `{
  levels: [], cur: null, keccak: [], errors: [], lastGas: false, ep: null, extSize: null,
  frames: [],
  BANNED: { 58: 'GASPRICE', 69: 'GASLIMIT', 68: 'PREVRANDAO', 66: 'TIMESTAMP', 72: 'BASEFEE', 64: 'BLOCKHASH',
    67: 'NUMBER', 71: 'SELFBALANCE', 49: 'BALANCE', 50: 'ORIGIN', 65: 'COINBASE', 255: 'SELFDESTRUCT',
    254: 'INVALID', 73: 'BLOBHASH', 74: 'BLOBBASEFEE', 240: 'CREATE', 245: 'CREATE2' },
  CALLS: { 241: 'CALL', 242: 'CALLCODE', 244: 'DELEGATECALL', 250: 'STATICCALL' },
  EXTCODE: { 59: 'EXTCODESIZE', 60: 'EXTCODECOPY', 63: 'EXTCODEHASH' },
  WATCHED: { 58: 1, 69: 1, 68: 1, 66: 1, 72: 1, 64: 1, 67: 1, 71: 1, 49: 1, 50: 1, 65: 1, 255: 1, 254: 1, 73: 1,
    74: 1, 240: 1, 245: 1, 241: 1, 242: 1, 244: 1, 250: 1, 59: 1, 60: 1, 63: 1, 84: 1, 85: 1, 92: 1, 93: 1, 32: 1 },
  note: function (where, e) { if (this.errors.length < 20) this.errors.push(where + ': ' + e) },
  num: function (v) { return parseInt(v.toString()) },
  mem: function (log, off, len) {
    if (!(len > 0)) return '0x';
    var size = typeof log.memory.length === 'function' ? log.memory.length() : off + len;
    if (off >= size) return '0x';
    return toHex(log.memory.slice(off, Math.min(off + len, size)));
  },
  seeCode: function (lvl, addr, db, opName) {
    var h = toHex(addr);
    if (lvl.codeSize[h] !== undefined || isPrecompiled(addr)) return;
    lvl.codeSize[h] = { size: db.getCode(addr).length, op: opName };
  },
  count: function (lvl, name) { lvl.opcodes[name] = (lvl.opcodes[name] || 0) + 1 },
  step: function (log, db) { try { this.onStep(log, db) } catch (e) { this.note('step', e) } },
  onStep: function (log, db) {
    var op = log.op.toNumber();
    var depth = log.getDepth();
    var call = this.CALLS[op];
    if (depth === 1) {
      if (this.ep === null) this.ep = toHex(log.contract.getAddress());
      if (op === 241 || op === 250) {
        var hasValue = op === 241;
        var inOff = this.num(log.stack.peek(hasValue ? 3 : 2));
        var inLen = this.num(log.stack.peek(hasValue ? 4 : 3));
        this.cur = { sig: inLen >= 4 ? this.mem(log, inOff, 4) : '0x',
          to: toHex(toAddress(log.stack.peek(1).toString(16))),
          opcodes: {}, access: {}, codeSize: {}, extCode: {}, calls: [], oog: false };
        this.levels.push(this.cur);
      }
      this.lastGas = false;
      return;
    }
    var lvl = this.cur;
    if (lvl === null) return;
    if (this.extSize !== null) {
      // [OP-051]: EXTCODESIZE then ISZERO (21) is Solidity's code check before a call.
      if (op !== 21) lvl.extCode[this.extSize] = 'EXTCODESIZE';
      this.extSize = null;
    }
    if (this.lastGas && call === undefined) this.count(lvl, 'GAS');
    this.lastGas = op === 90;
    // Most steps are none of the opcodes below: leave before any conversion (the tracer runs
    // interpreted, once per step).
    if (!this.WATCHED[op]) return;
    var self = toHex(log.contract.getAddress());
    var banned = this.BANNED[op];
    if (banned !== undefined && self !== this.ep) this.count(lvl, banned);
    if (op === 84 || op === 85 || op === 92 || op === 93) {
      var a = lvl.access[self] || (lvl.access[self] = { reads: {}, writes: {} });
      var slot = '0x' + log.stack.peek(0).toString(16);
      if (op === 84 || op === 92) a.reads[slot] = true; else a.writes[slot] = true;
    } else if (op === 32) {
      var len = this.num(log.stack.peek(1));
      if (len >= 32 && len <= 512 && this.keccak.length < 4096)
        this.keccak.push(this.mem(log, this.num(log.stack.peek(0)), len));
    } else if (this.EXTCODE[op] !== undefined) {
      var target = toAddress(log.stack.peek(0).toString(16));
      this.seeCode(lvl, target, db, this.EXTCODE[op]);
      if (op === 59) this.extSize = toHex(target); else lvl.extCode[toHex(target)] = this.EXTCODE[op];
    } else if (call !== undefined) {
      var to = toAddress(log.stack.peek(1).toString(16));
      this.seeCode(lvl, to, db, call);
      var withValue = op === 241 || op === 242;
      var off = this.num(log.stack.peek(withValue ? 3 : 2));
      var size = this.num(log.stack.peek(withValue ? 4 : 3));
      if (lvl.calls.length < 500)
        lvl.calls.push({ op: call, from: self, to: toHex(to), sig: size >= 4 ? this.mem(log, off, 4) : '0x',
          value: withValue ? '0x' + log.stack.peek(2).toString(16) : '0x0' });
    }
  },
  enter: function (frame) {
    try { this.frames.push(isPrecompiled(frame.getTo())) } catch (e) { this.frames.push(false); this.note('enter', e) }
  },
  exit: function (res) {
    try {
      var precompile = this.frames.pop();
      var err = res.getError();
      if (err && !precompile && this.cur !== null && /out of gas|outofgas/i.test(String(err))) this.cur.oog = true;
    } catch (e) { this.note('exit', e) }
  },
  fault: function (log, db) {},
  result: function (ctx, db) {
    var out = '0x';
    try { out = toHex(ctx.output).slice(0, 10) } catch (e) { this.note('result', e) }
    return { levels: this.levels, keccak: this.keccak, errors: this.errors, error: ctx.error ? String(ctx.error) : null, selector: out };
  }
}`

export interface TraceLevel {
  /** Selector of the EntryPoint's call that opened the level, and its target. */
  sig: Hex
  to: Address
  opcodes: Record<string, number>
  access: Record<string, { reads: Record<string, true>; writes: Record<string, true> }>
  codeSize: Record<string, { size: number; op: string }>
  extCode: Record<string, string>
  calls: { op: string; from: Address; to: Address; sig: Hex; value: Hex }[]
  oog: boolean
}

export interface ValidationTrace {
  levels: TraceLevel[]
  keccak: Hex[]
  /** Exceptions the tracer caught: the trace may be incomplete. */
  errors: string[]
  /** How the traced call ended: error text (null on success) and the first 4 bytes it returned. */
  error: string | null
  selector: Hex
}

const simulateValidationV07 = parseAbi([
  'struct PackedUserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; bytes32 accountGasLimits; uint256 preVerificationGas; bytes32 gasFees; bytes paymasterAndData; bytes signature; }',
  'function simulateValidation(PackedUserOperation userOp)',
])

/** v0.6 simulateValidation always reverts with ValidationResult (or …WithAggregation). */
const V06_RESULTS = new Set(['0xe0cff05f', '0xfaecb4e4'])

/** The data of the error a trace that ended unlike its simulation throws (the state moved). */
export const TRACE_DISAGREED = { traceDisagreed: true } as const

/** Traces the same validation simulation the Validator ran, with the same state override. */
export async function traceValidation(
  chain: BundlerChain,
  ep: EntryPointRef,
  op: UserOperation,
  override: StateOverride = {},
): Promise<ValidationTrace> {
  const data =
    op.version === 'v06'
      ? encodeFunctionData({
          abi: entryPoint06Abi,
          functionName: 'simulateValidation',
          args: [v06Struct(op)],
        })
      : encodeFunctionData({
          abi: simulateValidationV07,
          functionName: 'simulateValidation',
          args: [packV07(op)],
        })
  const overrides = simulationOverride(ep, override)
  const trace = await chain.request<ValidationTrace>('debug_traceCall', [
    { to: ep.address, data },
    'latest',
    { tracer: TRACER, ...(Object.keys(overrides).length > 0 ? { stateOverrides: overrides } : {}) },
  ])
  if (!trace || !Array.isArray(trace.levels))
    throw new BundlerError(BundlerErrorCode.internal, 'debug_traceCall returned no ERC-7562 trace')
  if (trace.errors.length > 0)
    throw new BundlerError(
      BundlerErrorCode.internal,
      `the ERC-7562 tracer failed, so the op cannot be checked: ${trace.errors.slice(0, 3).join('; ')}`,
    )
  // The traced run must end as the simulation did, or it described another execution.
  const ended = op.version === 'v06' ? V06_RESULTS.has(trace.selector) : trace.error === null
  if (!ended)
    throw new BundlerError(
      BundlerErrorCode.internal,
      `the traced validation ended differently from the simulation (${trace.error ?? 'returned'} ${trace.selector})`,
      TRACE_DISAGREED,
    )
  return trace
}
