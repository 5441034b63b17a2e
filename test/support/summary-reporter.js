/**
 * Prints the plain closing line CI reads ("jest: N passed, N failed, N skipped") after Jest's own summary,
 * and what still keeps the process alive if it has not exited 5 s after the run.
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    process.stdout.write(
      `\njest: ${results.numPassedTests} passed, ${failed} failed, ${results.numPendingTests} skipped\n`,
    );
    // Runs only if the process is still alive 5 s later: names what a spec left open (unref'd, so
    // it keeps nothing alive itself).
    const open = () => process.getActiveResourcesInfo().join(', ');
    setTimeout(
      () => process.stdout.write(`jest: still open after the run: ${open()}\n`),
      5000,
    ).unref();
  }
}
module.exports = SummaryReporter;
