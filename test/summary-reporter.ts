import type { Reporter, TestModule } from 'vitest/node'

/**
 * Prints the plain closing line CI reads ("N passed, N failed, N skipped") after vitest's own
 * summary, counting every test case of the run. Module-level failures (a suite that could not
 * load) and failed suite hooks count as failed too. Before it, one line per reason tests were
 * skipped for (the "(skipped: DATABASE_URL not set)" that test/helpers/services.ts puts in a
 * title), with the files: a run without PostgreSQL or Redis says what it left out.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>) {
    let passed = 0
    let failed = unhandledErrors.length
    let skipped = 0
    const reasons = new Map<string, { tests: number; files: Set<string> }>()
    for (const mod of testModules) {
      if (mod.errors().length > 0 || (mod.state() === 'failed' && [...mod.children.allTests()].length === 0))
        failed++
      // A failed beforeAll/afterAll leaves its tests "skipped": the hook's failure counts.
      for (const suite of mod.children.allSuites()) if (suite.errors().length > 0) failed++
      for (const test of mod.children.allTests()) {
        const state = test.result().state
        if (state === 'passed') passed++
        else if (state === 'failed') failed++
        else {
          skipped++
          const reason = /\(skipped: ([^)]+)\)/.exec(test.fullName)?.[1]
          if (!reason) continue
          const r = reasons.get(reason) ?? { tests: 0, files: new Set<string>() }
          r.tests++
          r.files.add(mod.relativeModuleId)
          reasons.set(reason, r)
        }
      }
    }
    let out = ''
    for (const [reason, r] of reasons)
      out += `\nskipped because ${reason}: ${plural(r.tests, 'test')} in ${plural(r.files.size, 'file')} (${[...r.files].sort().join(', ')})`
    process.stdout.write(`${out}\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`)
  }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`
