import { LockEngine } from '../core/lock-engine';
import { DistributedLockError } from '../errors/distributed-lock.error';
import type { LockInspection } from '../interfaces/lock-backend.interface';
import {
  CliUsageError,
  EXIT_NOTHING,
  EXIT_OK,
  EXIT_UNAVAILABLE,
  EXIT_USAGE,
  USAGE,
  type CliArgs,
} from './cli.args';
import { backendFromUrl } from './cli.connect';

/** Where the command writes; a test passes its own. */
export interface CliOutput {
  out(line: string): void;
  err(line: string): void;
  /** watch: resolves after `ms`, or at once when the user stops it (Ctrl-C). */
  sleep(ms: number): Promise<boolean>;
}

/** Budget of one backend call of the command (ms). */
const CALL_TIMEOUT_MS = 5_000;

/** Runs the parsed command; resolves with the exit code. Never throws. */
export async function runCli(args: CliArgs, io: CliOutput): Promise<number> {
  let engine: LockEngine | undefined;
  try {
    engine = new LockEngine({
      backend: backendFromUrl(args.url, args.table),
      keyPrefix: args.keyPrefix,
      operationTimeout: CALL_TIMEOUT_MS,
    });
    return await COMMANDS[args.command](engine, args, io);
  } catch (error) {
    return fail(error, io);
  } finally {
    await engine?.close().catch(() => undefined);
  }
}

type Command = (engine: LockEngine, args: CliArgs, io: CliOutput) => Promise<number>;

const COMMANDS: Record<CliArgs['command'], Command> = {
  async list(engine, args, io) {
    const keys = await engine.operator.list(args.prefix, 'default', args.limit);
    if (args.json) io.out(JSON.stringify({ keys }));
    else for (const key of keys) io.out(key);
    return keys.length ? EXIT_OK : EXIT_NOTHING;
  },

  async inspect(engine, args, io) {
    const report = await engine.operator.inspect(args.key as string);
    const view = inspection(report, args.keyPrefix);
    if (args.json) io.out(JSON.stringify(view));
    else for (const line of describe(view)) io.out(line);
    return report.held ? EXIT_OK : EXIT_NOTHING;
  },

  async release(engine, args, io) {
    if (!args.yes)
      throw new CliUsageError(`release frees "${args.key}" whoever holds it: add --yes to confirm`);
    const released = await engine.operator.forceRelease(args.key as string);
    if (args.json) io.out(JSON.stringify({ key: args.key, released }));
    else io.out(released ? `released ${args.key}` : `${args.key} was not held`);
    return released ? EXIT_OK : EXIT_NOTHING;
  },

  async watch(engine, args, io) {
    for (let n = 1; ; n++) {
      const keys = await engine.operator.list(args.prefix, 'default', args.limit);
      const rows = await Promise.all(
        keys.map(async (key) => inspection(await engine.operator.inspect(key), args.keyPrefix)),
      );
      if (args.json) io.out(JSON.stringify({ at: new Date().toISOString(), locks: rows }));
      else for (const line of table(rows)) io.out(line);
      if (args.count !== undefined && n >= args.count) return EXIT_OK;
      if (!(await io.sleep(args.interval))) return EXIT_OK;
    }
  },
};

/** What inspect and watch show of a key: JSON-safe (tokens as strings), the app's own key. */
interface KeyView {
  key: string;
  held: boolean;
  mode?: string;
  fencingToken?: string;
  waiters?: number;
  holders: {
    owner?: string;
    mode: string;
    remainingTtl?: number;
    /** Who holds it, where the grant stored it (host, pid, the app's `instance`). */
    host?: string;
    pid?: number;
    instance?: string;
    metadata?: Record<string, string>;
  }[];
}

function inspection(r: LockInspection, keyPrefix: string): KeyView {
  return {
    key: r.key.startsWith(keyPrefix) ? r.key.slice(keyPrefix.length) : r.key,
    held: r.held,
    mode: r.mode,
    fencingToken: r.fencingToken === undefined ? undefined : String(r.fencingToken),
    waiters: r.waiters,
    holders: r.holders.map((h) => ({
      owner: h.owner,
      mode: h.mode,
      remainingTtl: h.remainingTtl === undefined ? undefined : Math.round(h.remainingTtl),
      host: h.metadata?.host,
      pid: h.metadata?.pid === undefined ? undefined : Number(h.metadata.pid),
      instance: h.metadata?.instance,
      metadata: h.metadata ? { ...h.metadata } : undefined,
    })),
  };
}

function describe(v: KeyView): string[] {
  const lines = [
    `${v.key}: ${v.held ? `held (${v.mode ?? 'exclusive'})` : 'not held'}` +
      (v.fencingToken ? `, last fencing token ${v.fencingToken}` : '') +
      (v.waiters !== undefined ? `, ${v.waiters} waiting` : ''),
  ];
  for (const h of v.holders)
    lines.push(
      `  holder ${who(h)} ${h.mode}` +
        (h.remainingTtl !== undefined ? `, ttl ${seconds(h.remainingTtl)} left` : '') +
        (h.owner ? `, owner ${h.owner}` : ''),
    );
  return lines;
}

/**
 * A holder as a person reads it: `host:pid (instance)` (the instance left out when it is the
 * default `host:pid`), else what another client stored, else its owner token's start.
 */
function who(h: KeyView['holders'][number]): string {
  if (h.host !== undefined) {
    const at = `${h.host}:${h.pid}`;
    return h.instance && h.instance !== at ? `${at} (${h.instance})` : at;
  }
  if (h.metadata?.data) return `data "${h.metadata.data}"`;
  return h.owner ? `${h.owner.slice(0, 12)}\u2026` : '(identity not stored)';
}

/** watch's text table: one row per held key, its first holder and ttl. */
function table(rows: KeyView[]): string[] {
  const head = ['KEY', 'MODE', 'HOLDERS', 'TTL LEFT', 'TOKEN', 'WAITING', 'HOLDER'];
  const body = rows.map((r) => [
    r.key,
    r.mode ?? '-',
    String(r.holders.length),
    r.holders[0]?.remainingTtl !== undefined ? seconds(r.holders[0].remainingTtl) : '-',
    r.fencingToken ?? '-',
    r.waiters === undefined ? '-' : String(r.waiters),
    r.holders[0] ? who(r.holders[0]) : '-',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [`${new Date().toISOString()}  ${rows.length} held`, line(head), ...body.map(line), ''];
}

function seconds(ms: number): string {
  return ms >= 10_000 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(1)} s`;
}

function fail(error: unknown, io: CliOutput): number {
  const e = error as { code?: unknown; message?: unknown };
  if (error instanceof CliUsageError) {
    if (error.message) io.err(`error: ${error.message}`);
    io.err(USAGE);
    return EXIT_USAGE;
  }
  if (error instanceof DistributedLockError && e.code === 'INVALID_LOCK_OPTIONS') {
    io.err(`error: ${error.message}`);
    return EXIT_USAGE;
  }
  io.err(`error: ${String(e?.message ?? error)}`);
  return EXIT_UNAVAILABLE;
}
