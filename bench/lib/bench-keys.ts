import type { AuthService } from '../../src/auth/service.ts'
import type { Storage } from '../../src/storage/database.ts'

/**
 * The bench's two accounts: an enterprise key (no limiter call) and a key on a limited plan
 * whose limits a bench never reaches, so every call goes through the limiter.
 */
export async function createBenchKeys(
  auth: AuthService,
  db: Storage['db'],
): Promise<{ key: string; limitedKey: string }> {
  await auth.createAccount('bench@halyard.local', 'enterprise')
  const { key } = await auth.createKey({ accountEmail: 'bench@halyard.local', env: 'test' })
  const limited = await auth.createAccount('bench-limited@halyard.local', 'growth')
  await db
    .updateTable('accounts')
    .set({ limit_rps: 1_000_000_000, limit_rpd: '2000000000', limit_cups: 1_000_000_000 })
    .where('id', '=', limited.id)
    .execute()
  const { key: limitedKey } = await auth.createKey({
    accountEmail: 'bench-limited@halyard.local',
    env: 'test',
  })
  return { key, limitedKey }
}
