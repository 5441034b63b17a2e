import { closeSync, openSync, writeSync } from 'node:fs';
import type { LockHandle } from '../../lib';
import { JsonLinesClient } from './json-lines.channel';
import { SeededRandom } from './seeded.random';
import {
  DEFAULT_KEY,
  now,
  type HistoryEvent,
  type Role,
  type Via,
  type Workload,
} from './history.types';
import { TORTURE_BACKENDS, type BackendName } from './torture.backends';
import { installClockRate } from './clock-rate';
import type { GrantSpec } from './torture-nest.app';

/** Keys multi-key grants draw 2-3 from (DEFAULT_KEY is the plain lock's: they contend with it). */
export const MULTI_KEYS = [DEFAULT_KEY, 'k1', 'k2', 'k3'];
/** Semaphore sizes; each has its own key `sem<N>`, so every holder of a key agrees on N. */
export const PERMITS = [2, 3, 4];

/**
 * One torture worker process. Loops: acquire the lock through the public API of a small Nest app
 * (LockService.withLock, LockService.acquire + release, or a @Locked provider method) -> read the fenced store -> yield a random short time ->
 * if its own signal has not aborted, write value + 1 with the handle's fencing token -> release.
 * Readers (shared mode) take the lock shared and bracket a read with begin/end at the store.
 * Writers draw each operation's workload from the seeded random: the plain lock on `counter`, a
 * semaphore permit (`sem<N>` with permits N from 2..4; at the store: begin, yield, `valid` if the
 * signal is intact, end), or a multi-key lock on 2-3 keys of MULTI_KEYS in random order (read every
 * key's counter with that key's token, yield, write every key).
 * Every step is appended synchronously to a JSON-lines history, so a SIGKILL loses nothing written.
 */
export interface WorkerConfig {
  slot: number;
  inc: number;
  backend: BackendName;
  client: unknown;
  storePort: number;
  historyFile: string;
  role: Role;
  via: Via;
  ttl: number;
  wait: number;
  key: string;
  seed: number;
  /** Longest yield inside the critical section, ms. */
  yieldMax: number;
  /** Longest pause between two operations, ms. */
  thinkMax: number;
  /** false: write even after the handle's signal aborted (a careless holder; fencing alone protects). */
  signalCheck: boolean;
  /** Workloads writers draw from (readers always take the plain lock shared). Default: plain. */
  workloads?: Workload[];
  /** Install the clock-rate wrapper (the clock nemesis sends `{ type: 'clock', rate }`). */
  clock?: boolean;
}

/** Runs one critical section under a granted handle; `op` is this grant's id. */
export type Section = (handle: LockHandle, op: string) => Promise<void>;

async function main(): Promise<void> {
  const cfg = JSON.parse(process.env.TORTURE_WORKER as string) as WorkerConfig;
  if (cfg.clock) {
    const clock = installClockRate();
    process.on('message', (m: { type?: string; rate?: number }) => {
      if (m?.type === 'clock' && typeof m.rate === 'number') clock.setRate(m.rate);
    });
  }
  const fd = openSync(cfg.historyFile, 'a');
  const record = (e: HistoryEvent) => writeSync(fd, `${JSON.stringify(e)}\n`);
  const rng = new SeededRandom(cfg.seed * 7919 + cfg.slot * 131 + cfg.inc);
  const store = new JsonLinesClient(cfg.storePort);
  const { backend, close } = await (
    TORTURE_BACKENDS[cfg.backend] as NonNullable<(typeof TORTURE_BACKENDS)[BackendName]>
  ).connect(cfg.client, cfg.ttl);
  const mode = cfg.role === 'reader' ? 'shared' : 'exclusive';
  const sleep = (max: number) => new Promise((r) => setTimeout(r, rng.int(0, max)));

  /** Semaphore permit: begin at the store, yield, then (signal intact) `valid` and end. */
  const permit = async (handle: LockHandle, op: string, token: string) => {
    const key = handle.key.replace(/#\d+$/, '');
    await store.call({ op: 'sbegin', key, token, attempt: op }).answer;
    // Longer than a lock's section, so that permits are held at the same time.
    await sleep(3 * cfg.yieldMax);
    if (handle.signal.aborted) {
      record({ ev: 'skip-write', t: now(), op });
      return;
    }
    record({ ev: 'valid', t: now(), op });
    await store.call({ op: 'send', key, token, attempt: op }).answer;
  };

  /** Plain or multi-key writer: read every key's counter, yield, write every key's counter. */
  const write = async (op: string, tokens: [string, string][], signal: AbortSignal) => {
    const reads: { key: string; token: string; value: number; shadow: number }[] = [];
    for (const [key, token] of tokens) {
      const read = await store.call({ op: 'read', key, token, attempt: op }).answer;
      record({
        ev: 'read',
        t: now(),
        op,
        accepted: read.accepted as boolean,
        value: read.value as number,
      });
      reads.push({ key, token, value: read.value as number, shadow: read.shadow as number });
    }
    await sleep(cfg.yieldMax);
    for (const r of reads) {
      // The one check a holder owes its resource: never write after its own signal said "lost".
      if (cfg.signalCheck && signal.aborted) {
        record({ ev: 'skip-write', t: now(), op });
        return;
      }
      const value = r.value + 1;
      record({ ev: 'write-invoke', t: now(), op, value });
      const w = await store.call({
        op: 'write',
        key: r.key,
        token: r.token,
        attempt: op,
        value,
        shadow: r.shadow + 1,
      }).answer;
      record({ ev: 'write', t: now(), op, accepted: w.accepted as boolean });
    }
  };

  // A native semaphore orders its grants' tokens per key; the core's permit-based one hands out the
  // token of whichever permit `<key>#<i>` was free, and the handle does not say which permit: no
  // order to check (an empty map tells the checker so).
  const nativeSemaphore = backend.semaphore !== undefined;
  const permitTokens = (kind: Workload, tokens: [string, string][]) =>
    Object.fromEntries(kind === 'semaphore' && !nativeSemaphore ? [] : tokens);
  const kinds = new Map<string, Workload>();
  const section: Section = async (handle, op) => {
    const token = handle.fencingToken.toString();
    const kind = kinds.get(op) ?? 'plain';
    const tokens = [...handle.fencingTokens].map(([k, v]) => [k, v.toString()] as [string, string]);
    record({
      ev: 'ok',
      t: now(),
      op,
      token,
      mode: handle.mode,
      ...(kind === 'plain' ? {} : { tokens: permitTokens(kind, tokens) }),
    });
    const lost = () =>
      record({
        ev: 'lost',
        t: now(),
        op,
        reason: String((handle.signal.reason as Error)?.message),
      });
    // A grant can arrive already lost (its validity ran out before the section started).
    if (handle.signal.aborted) lost();
    else handle.signal.addEventListener('abort', lost, { once: true });
    try {
      if (cfg.role === 'writer') {
        if (kind === 'semaphore') await permit(handle, op, token);
        else await write(op, kind === 'plain' ? [[cfg.key, token]] : tokens, handle.signal);
      } else {
        await store.call({ op: 'rbegin', token, attempt: op }).answer;
        await sleep(cfg.yieldMax);
        if (handle.signal.aborted) {
          record({ ev: 'skip-write', t: now(), op });
          return;
        }
        const end = await store.call({ op: 'rend', token, attempt: op }).answer;
        record({ ev: 'rend', t: now(), op, accepted: end.accepted as boolean });
      }
    } catch (error) {
      record({ ev: 'store-error', t: now(), op, message: String((error as Error).message) });
    }
  };

  /** This operation's workload and what it asks the lock service for (seeded per worker). */
  const workloads: Workload[] = cfg.role === 'writer' ? (cfg.workloads ?? ['plain']) : ['plain'];
  const draw = (): { kind: Workload; grant?: GrantSpec; keys?: string[]; permits?: number } => {
    const kind = workloads.length === 1 ? workloads[0] : rng.pick(workloads);
    if (kind === 'semaphore') {
      const permits = rng.pick(PERMITS);
      const key = `sem${permits}`;
      return { kind, grant: { key, permits }, keys: [key], permits };
    }
    if (kind === 'multi') {
      const keys = rng.shuffle(MULTI_KEYS).slice(0, rng.int(2, 3));
      return { kind, grant: { key: keys }, keys };
    }
    return { kind };
  };

  const { createRunner } = await import('./torture-nest.app');
  const run = await createRunner(cfg, backend, section);
  let stopping = false;
  process.on('SIGTERM', () => (stopping = true));
  record({
    ev: 'ready',
    t: now(),
    slot: cfg.slot,
    inc: cfg.inc,
    role: cfg.role,
    via: cfg.via,
    pid: process.pid,
  });
  process.send?.({ type: 'ready' });

  for (let n = 1; !stopping; n++) {
    const op = `${cfg.slot}.${cfg.inc}.${n}`;
    const { kind, grant, keys, permits } = draw();
    kinds.set(op, kind);
    record({
      ev: 'invoke',
      t: now(),
      op,
      mode,
      ...(kind === 'plain' ? {} : { workload: kind, keys }),
      ...(permits === undefined ? {} : { permits }),
    });
    try {
      await run(op, grant);
      record({ ev: 'release', t: now(), op });
    } catch (error) {
      const e = error as { code?: string; name?: string; message?: string };
      record({
        ev: 'fail',
        t: now(),
        op,
        error: e.code ?? e.name ?? 'Error',
        message: String(e.message),
      });
    }
    kinds.delete(op);
    await sleep(cfg.thinkMax);
  }
  await run.close();
  await close();
  store.close();
  record({ ev: 'stop', t: now() });
  closeSync(fd);
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error('torture worker failed to start or stop:', error);
  process.exit(70);
});
