/**
 * The whole database as Kysely sees it. Empty here: each feature declares its own tables in
 * its store.ts and adds them by declaration merging
 * (`declare module '../storage/schema.ts' { interface Database extends XTables {} }`), so the
 * storage floor names no feature. tsc compiles the whole project, so every feature's tables are
 * part of `Database` wherever it is used.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging in each feature's store.ts
export interface Database {}
