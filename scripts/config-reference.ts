// `npm run docs:config`: writes docs/configuration.md from the config schemas
// (src/server/config-reference.ts); src/server/config-reference.test.ts fails while it is stale.
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { renderConfigReference } from '../src/server/config-reference.ts'

const target = path.resolve(import.meta.dirname, '../docs/configuration.md')
writeFileSync(target, renderConfigReference())
console.log(`wrote ${path.relative(process.cwd(), target)}`)
