import { z } from 'zod'
import { HalyardError } from '../../errors.ts'
import { RPC_INTERNAL_ERROR, RPC_INVALID_PARAMS, RpcError, type RpcOutcome } from '../../jsonrpc.ts'
import type { Logger } from '../../logger.ts'
import { describeZodError } from '../../shared/validation.ts'

/**
 * Params of an `alchemy_*` row, checked by its zod tuple: a mismatch is -32602 naming the field
 * (`params[1].maxCount: …`), the way Alchemy's own errors name it.
 */
export function parseParams<T>(schema: z.ZodType<T>, params: readonly unknown[]): T {
  const r = schema.safeParse(params)
  if (!r.success)
    throw new RpcError(RPC_INVALID_PARAMS, `invalid params: ${describeZodError(r.error, 'params')}`)
  return r.data
}

/** A params tuple whose wrong length is answered with the shape expected (`shape`). */
export function paramsTuple<const T extends readonly [z.ZodType, ...z.ZodType[]]>(items: T, shape: string) {
  return z.tuple(items, {
    error: (iss) => (iss.code === 'too_small' || iss.code === 'too_big' ? `must be ${shape}` : undefined),
  })
}

/**
 * Runs a row's body and maps what the services throw onto JSON-RPC: a client mistake
 * (invalid_request, not_found) is -32602 with the service's message, an RpcError keeps its code
 * (an upstream failure is already one), anything else is logged and answered -32603.
 */
export async function answer(
  logger: Logger,
  method: string,
  body: () => Promise<unknown>,
): Promise<RpcOutcome> {
  try {
    return { result: await body() }
  } catch (err) {
    if (err instanceof RpcError) return { error: err.toObject() }
    if (err instanceof HalyardError && (err.code === 'invalid_request' || err.code === 'not_found'))
      return { error: { code: RPC_INVALID_PARAMS, message: err.message } }
    logger.error({ err, method }, 'alchemy method failed unexpectedly')
    return { error: { code: RPC_INTERNAL_ERROR, message: 'internal error' } }
  }
}
