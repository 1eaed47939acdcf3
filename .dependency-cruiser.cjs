// The layering rules of README.md ("Layout"), checked by `npm run lint` (and so by .ci/run):
// rules kept only in prose drift. `npm run lint:deps` lists every violation, each with its rule.

/** Ground floors: every feature may build on them, and they build on no feature. */
const GROUND = '^src/(storage|config|chains|net|common)/|^src/[^/]+\\.ts$'
/** The composition roots: they wire the features together, and nothing else imports them. */
const ROOTS = '^src/(server|cli)/'
/**
 * Tests and their support code: test files, the test tree, and the helpers beside a feature's
 * tests (named *-fixture.ts or test-*.ts, or kept in a testdata/ folder). They may reach anywhere
 * to set up what they check; production code never imports them.
 */
const TESTS = '\\.test\\.ts$|-fixture\\.ts$|/test-[^/]+\\.ts$|/testdata/|^test/'

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'ground-imports-feature',
      comment:
        'A ground floor (storage, config, chains, net, common, top-level src/*.ts) imports no feature: ' +
        'a feature adds its tables and config section to the ground floor by declaration merging.',
      severity: 'error',
      from: { path: GROUND, pathNot: TESTS },
      to: { path: '^src/', pathNot: GROUND },
    },
    {
      name: 'feature-imports-root',
      comment: 'No feature imports src/server/ or src/cli/: the composition roots import features, not back.',
      severity: 'error',
      from: { path: '^src/', pathNot: `${ROOTS}|${TESTS}` },
      to: { path: ROOTS },
    },
    {
      name: 'alchemy-is-a-leaf',
      comment:
        'The Alchemy-compatibility root is a leaf: only the composition roots (and its own tests) import it; ' +
        'features never build on the compatibility layer.',
      severity: 'error',
      from: { path: '^src/', pathNot: `${ROOTS}|^src/alchemy/` },
      to: { path: '^src/alchemy/' },
    },
    {
      name: 'no-cycles',
      comment: 'No import cycles, type-only imports included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'production-imports-test',
      comment: 'Production code never imports a test file or the test tree (test/).',
      severity: 'error',
      from: { path: '^src/', pathNot: TESTS },
      to: { path: TESTS },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports count: a cycle through `import type` is still a cycle in the design.
    tsPreCompilationDeps: true,
    // TypeScript 7 (the native compiler) has no JavaScript API for dependency-cruiser to parse
    // with, so swc parses: it keeps `import type` and `export type` statements as dependencies.
    parser: 'swc',
    tsConfig: { fileName: 'tsconfig.json' },
  },
}
