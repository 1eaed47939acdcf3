// Types of build-cache.mjs for the TypeScript that imports it (the benches).
export function fingerprint(root: string): string
export function bundle(entry: string, outdir: string): Promise<void>
export function ensureBuild(root: string, entry?: string): Promise<string>
