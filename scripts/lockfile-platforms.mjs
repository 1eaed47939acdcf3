// The npm registry mirror this project is built against lacks the other-platform builds of
// biome and anvil, so `npm install` leaves them out of package-lock.json and `npm ci` then
// refuses the lock as out of sync. This adds the missing optional platform entries (os/cpu
// tagged, so npm skips them here and fetches them on the platform that needs them).
// Run after any `npm install`: node scripts/lockfile-platforms.mjs
import { readFileSync, writeFileSync } from 'node:fs'

const lockPath = new URL('../package-lock.json', import.meta.url)
const lock = JSON.parse(readFileSync(lockPath, 'utf8'))
const packages = lock.packages

const CPU = { x64: 'x64', amd64: 'x64', arm64: 'arm64' }
function platformOf(name) {
  const tail = name.split('/')[1]
  const parts = tail.split('-').slice(1) // drop "cli" / "anvil"
  const [os, arch, libc] = parts
  const entry = { os: [os], cpu: [CPU[arch] ?? arch] }
  if (os === 'linux') entry.libc = [libc === 'musl' ? 'musl' : 'glibc']
  return entry
}

let added = 0
for (const [path, pkg] of Object.entries(packages)) {
  if (!path.startsWith('node_modules/') || !pkg.optionalDependencies) continue
  for (const [dep, version] of Object.entries(pkg.optionalDependencies)) {
    if (!/^@(biomejs\/cli|foundry-rs\/anvil)-/.test(dep)) continue
    const key = `node_modules/${dep}`
    if (packages[key]) continue
    packages[key] = {
      version,
      ...platformOf(dep),
      ...(pkg.dev ? { dev: true } : {}),
      optional: true,
      license: pkg.license,
    }
    added += 1
  }
}
const sorted = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
)
lock.packages = sorted
writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`)
console.log(`lockfile-platforms: added ${added} entries`)
