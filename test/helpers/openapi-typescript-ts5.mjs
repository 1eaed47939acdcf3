import { register } from 'node:module'

/*
 * Loaded with `node --import` before openapi-typescript's CLI. openapi-typescript builds its
 * output with the TypeScript 5 compiler API (its peer dependency), which the project's own
 * `typescript` (7, the native port) does not provide; the TypeScript 5 package is installed
 * beside it as the `typescript5` alias (package.json), and this hook hands it to
 * openapi-typescript alone: every other import of `typescript` is left as it is.
 */
const hooks = `
export async function resolve(specifier, context, next) {
  if (specifier === 'typescript' && context.parentURL?.includes('/node_modules/openapi-typescript/'))
    return next('typescript5', context)
  return next(specifier, context)
}`
register(`data:text/javascript,${encodeURIComponent(hooks)}`)
