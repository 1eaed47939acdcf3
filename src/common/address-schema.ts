import { z } from 'zod'
import { isAddress, toLowerAddress } from '../types.ts'

/**
 * An address in the config file: any 0x-prefixed 20-byte hex string, kept lower-case so the
 * rest of the code compares addresses as strings. One schema, so every config key that names a
 * contract refuses a bad one with the same message.
 */
export const configAddressSchema = z
  .string()
  .refine(isAddress, 'must be a 0x-prefixed 20-byte hex address')
  .transform((a) => toLowerAddress(a))
