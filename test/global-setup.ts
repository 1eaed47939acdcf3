import { ensurePGliteImage } from './helpers/pglite-image.ts'

/** Once per run, before any test file: the migrated PGlite image every test database starts from. */
export default async function setup(): Promise<void> {
  await ensurePGliteImage()
}
