/**
 * Prints the plain closing line CI reads ("jest: N passed, N failed, N skipped") after Jest's own
 * summary. If the process has not exited 5 s after the run, it names what keeps it alive, with the
 * stack that created each timer still holding it (recorded through async_hooks; on 2 cores Jest
 * runs the specs in this process). A leak is a bug to fix, but it must not turn a finished run into
 * a CI timeout: 60 s after the run the process exits with the run's own status.
 */
const { createHook } = require('node:async_hooks');

const LEAK_REPORT_MS = 5_000;
const EXIT_AFTER_MS = 60_000;

/** Live timers and immediates by async id, with the stack of the call that made each. */
const live = new Map();
/** The spec file running when a timer was made (the previous one's name until the next ends). */
let running = 0;
createHook({
  init(id, type, _trigger, resource) {
    if (type === 'Timeout' || type === 'Immediate')
      live.set(id, { resource, made: new Error(type), file: running });
  },
  destroy(id) {
    live.delete(id);
  },
}).enable();

/** The frames of the code that made a timer (not Node's timer internals, not this hook). */
const stackOf = (error) =>
  error.stack
    .split('\n')
    .slice(1)
    .filter((line) => !/node:internal|node:timers|summary-reporter\.js/.test(line))
    .slice(0, 8)
    .join('\n');
/** A timer that keeps the process alive and is not Jest's own (its status line's interval). */
const holdsOn = ({ resource, made }) =>
  (typeof resource.hasRef !== 'function' || resource.hasRef()) &&
  !made.stack.includes('@jest/reporters');
const files = [];

class SummaryReporter {
  /**
   * With JEST_TIMER_LEAKS=1, names after each spec file the timers made during an earlier file that
   * are still alive and holding the process (a timer that outlives its spec by a whole file).
   */
  onTestFileResult(test) {
    files.push(test.path);
    running = files.length;
    if (process.env.JEST_TIMER_LEAKS !== '1') return;
    for (const timer of live.values()) {
      if (timer.file >= running - 1 || timer.told || !holdsOn(timer)) continue;
      timer.told = true;
      process.stdout.write(
        `jest: a timer made during ${files[timer.file] ?? '(start)'} is still alive after ` +
          `${test.path}; made at\n${stackOf(timer.made)}\n`,
      );
    }
  }

  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    process.stdout.write(
      `\njest: ${results.numPassedTests} passed, ${failed} failed, ${results.numPendingTests} skipped\n`,
    );
    // Both timers are unref'd: they keep nothing alive themselves, and run only if something else does.
    setTimeout(() => {
      process.stdout.write(
        `jest: still open after the run: ${process.getActiveResourcesInfo().join(', ')}\n`,
      );
      for (const timer of live.values()) {
        if (!holdsOn(timer)) continue;
        const during = files[timer.file] ?? '(the run)';
        process.stdout.write(
          `jest: a live timer made during ${during}, at\n${stackOf(timer.made)}\n`,
        );
      }
    }, LEAK_REPORT_MS).unref();
    setTimeout(() => {
      process.stdout.write(`jest: exiting ${EXIT_AFTER_MS / 1000} s after the run (see above)\n`);
      process.exit(failed > 0 || !results.success ? 1 : 0);
    }, EXIT_AFTER_MS).unref();
  }
}
module.exports = SummaryReporter;
