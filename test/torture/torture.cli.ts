import { cleanUp, runTorture } from './torture.runner';
import { formatSummary } from './torture.summary';
import { parseTortureArgs, UsageError } from './torture.options';

/**
 * `npm run torture -- --backend redis --workers 8 --duration 60s --faults kill,pause,restart,partition --seed 1`
 * Exit status: 0 safe and live, 1 a safety violation, 2 live-ness only, 64 bad usage, 70 harness failure.
 */
async function main(): Promise<number> {
  let options;
  try {
    options = parseTortureArgs(process.argv.slice(2));
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(error.message);
      return 64;
    }
    throw error;
  }
  const report = await runTorture(options, (line) => console.log(line));
  console.log(formatSummary(report));
  // With the report written elsewhere, a passing run's histories and logs are not needed.
  if (options.report !== undefined) cleanUp(report);
  if (!report.result.safe) return 1;
  return report.result.live && report.crashes.length === 0 ? 0 : 2;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error('torture harness failed:', error);
    process.exit(70);
  },
);
