import { z } from 'zod'
import { isAddress } from '../types.ts'
import { POLICY_ID, POLICY_ID_RULE } from './policy-service.ts'

/**
 * The `POST /gas/sponsor` request body; `entryPoint` picks v0.6 (v0.7 by default). The route's
 * gate and the service parse with it, and the OpenAPI document shows it.
 */
export const sponsorBodySchema = z
  .object({
    chain: z
      .string({ error: 'is required and must be a string' })
      .min(1)
      .max(64, 'must be a network slug (at most 64 characters)')
      .meta({ description: 'The network slug', example: 'ethereum-devnet' }),
    policy_id: z
      .string({ error: 'is required and must be a string' })
      .regex(POLICY_ID, POLICY_ID_RULE)
      .meta({ description: 'The gas policy that pays (gp_…)', example: 'gp_0123456789abcdef01234567' }),
    user_operation: z
      .unknown()
      .refine((v) => v !== undefined, 'is required')
      .describe(
        'The ERC-4337 UserOperation to sponsor, in the form of its EntryPoint version (hex quantities)',
      ),
    entryPoint: z.string().refine(isAddress, 'must be a 0x-prefixed 20-byte hex address').optional().meta({
      description: "The EntryPoint the operation is for; the network's newest when absent",
      example: '0x0000000071727De22E5E9d8BAf0edAc6f37da032',
    }),
  })
  .strict()
