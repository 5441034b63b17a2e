import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import type { LockBackend, ReleaseListener } from '../interfaces/lock-backend.interface';
import type { LockOptions } from '../interfaces/lock-options.interface';
import { LockHandle } from './lock-handle';
import { COMPOSITE_OPS, CompositeLease } from './multi-lock';

/** Largest `permits` accepted: every busy round tries each seat once. */
export const MAX_PERMITS = 1_000;

/** The part of the engine a semaphore uses. */
export interface SemaphoreEngine {
  readonly keyPrefix: string;
  acquire(key: string, options?: LockOptions): Promise<LockHandle>;
  tryAcquire(key: string, options?: LockOptions): Promise<LockHandle | null>;
  current(key?: string, backend?: string): LockHandle | undefined;
  backend(name?: string): LockBackend;
  resolveOptions(
    options: LockOptions | undefined,
    key?: string,
  ): { ttl: number; wait: number; backend: string };
}

export function checkPermits(value: unknown, key?: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_PERMITS) {
    throw new InvalidLockOptionsError('permits', value, `an integer from 1 to ${MAX_PERMITS}`, key);
  }
  return value;
}

/** The lock key of seat `i` of semaphore `key` (template values are %-encoded, so no value can forge '#'). */
export function seatKey(key: string, i: number): string {
  return `${key}#${i}`;
}

/**
 * A semaphore of `permits` holders over the lock machinery, on every backend: N seats, each an
 * ordinary exclusive lock `<key>#<i>`. A grant is one seat, so at most N hold at once by the
 * seats' own mutual exclusion, and a grant is a handle like a lock's (watchdog renewal, loss
 * signal, release, the seat's fencing token). A caller tries every seat once per round, starting
 * at a random seat to spread load; when all are busy it sleeps until a seat is released (the
 * backend's wake-ups for the seat keys), a backoff, or the deadline. Re-entrant: a context that
 * already holds a seat of this semaphore re-enters that seat. Holders that disagree on N: each
 * uses seats 0..N-1 of its own N, so at most the largest N among them hold at once; keep N in one
 * place (a constant, or config) for the bound you intend.
 */
export async function acquireSeat(
  engine: SemaphoreEngine,
  key: string,
  permits: number,
  options: LockOptions = {},
): Promise<LockHandle> {
  if (options.mode === 'shared')
    throw new InvalidLockOptionsError(
      'mode',
      'shared',
      "'exclusive' (a semaphore's seats are exclusive; use permits or shared, not both)",
      key,
    );
  const o = engine.resolveOptions({ ...options, permits: undefined } as LockOptions, key);
  const seats = Array.from({ length: permits }, (_, i) => seatKey(key, i));
  const wrap = (seat: LockHandle) =>
    new LockHandle(new CompositeLease([seat], o.ttl, [key]), COMPOSITE_OPS);
  const once = { ...options, permits: undefined, wait: 0 } as LockOptions;

  // Re-entrant: this context already holds one of the seats.
  const mine = seats.find((s) => engine.current(s, o.backend));
  if (mine) return wrap(await engine.acquire(mine, once));

  const wakeups = engine.backend(o.backend).wakeups;
  const deadline = performance.now() + o.wait;
  let delay = 10;
  // As the engine's own wait: a seat attempt that fails (backend unreachable) is retried while the
  // budget lasts; at the deadline the last failure surfaces, not a timeout (fail closed).
  let failure: unknown;
  for (;;) {
    const listeners: ReleaseListener[] = wakeups
      ? seats.map((s) => wakeups.listen(engine.keyPrefix + s))
      : [];
    try {
      const start = Math.floor(Math.random() * permits);
      for (let n = 0; n < permits; n++) {
        try {
          const seat = await engine.tryAcquire(seats[(start + n) % permits], once);
          if (seat) return wrap(seat);
        } catch (error) {
          if (!(error instanceof LockBackendUnavailableError)) throw error;
          failure = error;
        }
      }
      const left = deadline - performance.now();
      if (left <= 0) throw failure ?? new LockAcquireTimeoutError(key, o.wait);
      options.signal?.throwIfAborted();
      const sleep = Math.min(left, listeners.length ? 1_000 : Math.random() * delay);
      delay = Math.min(delay * 2, 500);
      await firstOf(listeners, sleep, options.signal);
      options.signal?.throwIfAborted();
    } finally {
      for (const l of listeners) l.dispose();
    }
  }
}

/** Resolves when any listener fires, after `ms`, or when `signal` aborts. */
function firstOf(listeners: ReleaseListener[], ms: number, signal?: AbortSignal): Promise<void> {
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(onAbort, Math.max(0, ms));
  const waits = listeners.map((l) => l.wait(ms, stop.signal));
  return Promise.race([
    new Promise<void>((r) => stop.signal.addEventListener('abort', () => r(), { once: true })),
    ...waits,
  ]).finally(() => {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    stop.abort();
  });
}
