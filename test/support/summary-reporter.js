/**
 * Prints the plain closing line CI reads ("jest: N passed, N failed, N skipped") after Jest's own summary.
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    process.stdout.write(
      `\njest: ${results.numPassedTests} passed, ${failed} failed, ${results.numPendingTests} skipped\n`,
    );
  }
}
module.exports = SummaryReporter;
