// node:test reporter that ends the run with one plain line: `N passed, N failed, N skipped`.
// Only leaf tests are counted (a suite's own pass/fail mirrors its children), and suites skipped whole
// (chromium, PostgreSQL or Redis missing): their tests never start, so the suite is the one skip reported.
export default async function* summaryReporter(source) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const skip = event.data.skip || event.data.todo;
    if (event.data.details?.type === 'suite') {
      if (skip) skipped++;
      continue;
    }
    if (skip) skipped++;
    else if (event.type === 'test:pass') passed++;
    else failed++;
  }
  yield `\n${passed} passed, ${failed} failed, ${skipped} skipped\n`;
}
