import { z } from 'zod'
import { describeZodError } from '../../common/validation.ts'
import { RPC_INVALID_PARAMS, RpcError } from '../../jsonrpc.ts'

/**
 * Params of a row that checks them with a zod tuple (the `alchemy_*` rows, account-kit's):
 * a mismatch is -32602 naming the field (`params[1].maxCount: …`), the way Alchemy's own
 * errors name it.
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
