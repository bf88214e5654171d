// node:test reporter that ends the run with one plain line: `N passed, N failed, N skipped`.
// Only leaf tests are counted (a suite's own pass/fail mirrors its children).
export default async function* summaryReporter(source) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    if (event.data.details?.type === 'suite') continue;
    if (event.data.skip || event.data.todo) skipped++;
    else if (event.type === 'test:pass') passed++;
    else failed++;
  }
  yield `\n${passed} passed, ${failed} failed, ${skipped} skipped\n`;
}
