#!/usr/bin/env node
/**
 * `npx nestjs-distributed-lock list|inspect KEY|release KEY --yes|watch --url URL`: see
 * docs/guide/operators.md. Sets the exit code; writes results to stdout, errors to stderr.
 */
import { CliUsageError, EXIT_USAGE, parseArgs, USAGE, type CliArgs } from './cli.args';
import { runCli } from './cli.commands';

async function main(): Promise<void> {
  let args: CliArgs;
  try {
    args = parseArgs(process.argv.slice(2), process.env);
  } catch (error) {
    if (error instanceof CliUsageError && error.message)
      process.stderr.write(`error: ${error.message}\n`);
    process.stderr.write(`${USAGE}\n`);
    process.exitCode = EXIT_USAGE;
    return;
  }
  let stop: (() => void) | undefined;
  const stopped = new Promise<false>((resolve) => {
    stop = () => resolve(false);
    process.once('SIGINT', stop);
  });
  process.exitCode = await runCli(args, {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    sleep: (ms) => {
      let timer: NodeJS.Timeout | undefined;
      const slept = new Promise<true>((resolve) => (timer = setTimeout(() => resolve(true), ms)));
      return Promise.race([slept, stopped]).finally(() => clearTimeout(timer));
    },
  });
  if (stop) process.removeListener('SIGINT', stop);
}

void main();
