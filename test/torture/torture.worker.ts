import { closeSync, openSync, writeSync } from 'node:fs';
import type { LockHandle } from '../../lib';
import { JsonLinesClient } from './json-lines.channel';
import { SeededRandom } from './seeded.random';
import { now, type HistoryEvent, type Role, type Via } from './history.types';
import { TORTURE_BACKENDS, type BackendName } from './torture.backends';

/**
 * One torture worker process. Loops: acquire the lock through the public API of a small Nest app
 * (LockService.withLock, LockService.acquire + release, or a @Locked provider method) -> read the fenced store -> yield a random short time ->
 * if its own signal has not aborted, write value + 1 with the handle's fencing token -> release.
 * Readers (shared mode) take the lock shared and bracket a read with begin/end at the store.
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
}

/** Runs one critical section under a granted handle; `op` is this grant's id. */
export type Section = (handle: LockHandle, op: string) => Promise<void>;

async function main(): Promise<void> {
  const cfg = JSON.parse(process.env.TORTURE_WORKER as string) as WorkerConfig;
  const fd = openSync(cfg.historyFile, 'a');
  const record = (e: HistoryEvent) => writeSync(fd, `${JSON.stringify(e)}\n`);
  const rng = new SeededRandom(cfg.seed * 7919 + cfg.slot * 131 + cfg.inc);
  const store = new JsonLinesClient(cfg.storePort);
  const { backend, close } = await (
    TORTURE_BACKENDS[cfg.backend] as NonNullable<(typeof TORTURE_BACKENDS)[BackendName]>
  ).connect(cfg.client, cfg.ttl);
  const mode = cfg.role === 'reader' ? 'shared' : 'exclusive';
  const sleep = (max: number) => new Promise((r) => setTimeout(r, rng.int(0, max)));

  const section: Section = async (handle, op) => {
    const token = handle.fencingToken.toString();
    record({ ev: 'ok', t: now(), op, token, mode: handle.mode });
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
        const read = await store.call({ op: 'read', token, attempt: op }).answer;
        record({
          ev: 'read',
          t: now(),
          op,
          accepted: read.accepted as boolean,
          value: read.value as number,
        });
        await sleep(cfg.yieldMax);
        // The one check a holder owes its resource: never write after its own signal said "lost".
        if (cfg.signalCheck && handle.signal.aborted) {
          record({ ev: 'skip-write', t: now(), op });
          return;
        }
        const value = (read.value as number) + 1;
        record({ ev: 'write-invoke', t: now(), op, value });
        const write = await store.call({
          op: 'write',
          token,
          attempt: op,
          value,
          shadow: (read.shadow as number) + 1,
        }).answer;
        record({ ev: 'write', t: now(), op, accepted: write.accepted as boolean });
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
    record({ ev: 'invoke', t: now(), op, mode });
    try {
      await run(op);
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
