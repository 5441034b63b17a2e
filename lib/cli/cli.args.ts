/** The command line of `nestjs-distributed-lock`, parsed; a usage error says what is wrong. */

export const EXIT_OK = 0;
/** Nothing listed, the key not held, nothing released. */
export const EXIT_NOTHING = 1;
export const EXIT_USAGE = 2;
export const EXIT_UNAVAILABLE = 3;

/** How often `watch` refreshes by default (ms). */
export const WATCH_INTERVAL_MS = 1_000;
/** Keys `list` and `watch` show at most by default. */
export const LIST_LIMIT = 1_000;

export type CliCommand = 'list' | 'inspect' | 'release' | 'watch';

export interface CliArgs {
  readonly command: CliCommand;
  readonly key?: string;
  /** redis://, rediss://, etcd://host:port, zk://host:port/base, postgres://, mysql:// */
  readonly url: string;
  readonly keyPrefix: string;
  readonly prefix: string;
  readonly limit: number;
  readonly json: boolean;
  readonly yes: boolean;
  readonly interval: number;
  /** watch: stop after this many refreshes (default: until Ctrl-C). */
  readonly count?: number;
  /** SQL backends: the lock table. */
  readonly table?: string;
}

export class CliUsageError extends Error {
  override readonly name = 'CliUsageError';
}

export const USAGE = `Usage: nestjs-distributed-lock <command> [options]

Commands:
  list                  keys held now (every process), under --prefix
  inspect KEY           holders (host:pid, instance, mode, ttl left, owner), fencing token, waiters
  release KEY --yes     force-release KEY whoever holds it (its holder learns at its next renewal)
  watch                 a live table of held keys and their holders (Ctrl-C to stop)

Options:
  --url URL             redis://, rediss://, etcd://host:port, zk://host:port/base,
                        postgres://, mysql:// (default: $LOCK_URL)
  --key-prefix P        the app's keyPrefix (default 'lock:')
  --prefix P            list/watch: keys starting with P (after the key prefix)
  --limit N             list/watch: at most N keys (default ${LIST_LIMIT})
  --table NAME          PostgreSQL/MySQL: the lock table (default: the backend's)
  --interval MS         watch: refresh every MS ms (default ${WATCH_INTERVAL_MS})
  --count N             watch: stop after N refreshes
  --json                machine-readable output (watch: one JSON line per refresh)
  --yes                 release: confirm

Exit codes: 0 done, 1 nothing found or released, 2 usage, 3 backend unavailable.`;

const FLAGS = new Set(['json', 'yes', 'help']);
const VALUES = new Set(['url', 'key-prefix', 'prefix', 'limit', 'interval', 'count', 'table']);

export function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv = {}): CliArgs {
  const positional: string[] = [];
  const values: Record<string, string> = {};
  const flags = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2);
    if (FLAGS.has(name)) flags.add(name);
    else if (VALUES.has(name)) {
      const value = inline ?? argv[++i];
      if (value === undefined) throw new CliUsageError(`--${name} needs a value`);
      values[name] = value;
    } else throw new CliUsageError(`unknown option --${name}`);
  }
  if (flags.has('help')) throw new CliUsageError('');
  const [command, key, ...extra] = positional;
  if (!command) throw new CliUsageError('no command');
  if (!['list', 'inspect', 'release', 'watch'].includes(command))
    throw new CliUsageError(`unknown command "${command}"`);
  const needsKey = command === 'inspect' || command === 'release';
  if (needsKey && !key) throw new CliUsageError(`${command} needs a KEY`);
  if ((!needsKey && key) || extra.length)
    throw new CliUsageError(`unexpected argument "${needsKey ? extra[0] : key}"`);
  const url = values.url ?? env.LOCK_URL;
  if (!url) throw new CliUsageError('no --url (or LOCK_URL) given');
  return {
    command: command as CliCommand,
    key,
    url,
    keyPrefix: values['key-prefix'] ?? 'lock:',
    prefix: values.prefix ?? '',
    limit: integer('limit', values.limit, LIST_LIMIT, 1, 100_000),
    json: flags.has('json'),
    yes: flags.has('yes'),
    interval: integer('interval', values.interval, WATCH_INTERVAL_MS, 100, 3_600_000),
    count: values.count === undefined ? undefined : integer('count', values.count, 1, 1, 1e9),
    table: values.table,
  };
}

function integer(
  name: string,
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
) {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new CliUsageError(`--${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return n;
}
