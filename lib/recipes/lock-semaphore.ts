/**
 * A semaphore of N over plain locks, for backends without a native one: N permits, each an
 * ordinary exclusive lock `<key>#<i>`, so at most N hold at once by the permits' own mutual
 * exclusion. A caller tries every permit once per round, starting at a random permit to spread
 * load; when all are busy it sleeps until a permit is released (the backend's wake-ups for the
 * permit keys), a backoff, or the deadline. Re-entrant: a context that already holds a permit
 * re-enters it. Holders agree on N: each also holds the key's permits record, and a request of
 * another N is refused (permits-record.ts); where the backend cannot keep that record, holders that
 * disagree on N each use permits 0..N-1 of their own N, so at most the largest N among them hold at
 * once.
 */
import { MAX_KEY_LENGTH } from '../backend-kit/limits';
import type { AcquireMeta, RecipeHost } from '../core/recipe-host';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { LockKeyResolutionError } from '../errors/lock-key-resolution.error';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import type { ReleaseListener } from '../interfaces/lock-backend.interface';
import type { LockOptions } from '../interfaces/lock-options.interface';
import type { LockHandle } from '../core/lease/lock-handle';
import { CompositeLease, compositeHandle } from './composite-lease';
import { agreeOnPermits, checkPermitsRecord, permitsKey } from './permits-record';

/**
 * The lock key of permit `i` of semaphore `key` (template values are %-encoded: no value forges
 * '#').
 */
export function permitKey(key: string, i: number): string {
  return `${key}#${i}`;
}

/**
 * Checks that the longest permit key fits the backend, before any permit is tried: a key at the
 * limit would fit as a lock but not as `<key>#<i>`. From a template (meta.keyTemplate) that is the
 * request's fault (LockKeyResolutionError, 400 over HTTP), as a plain key's length is.
 */
function checkPermitKeys(
  host: RecipeHost,
  key: string,
  longest: string,
  backend: string,
  meta?: AcquireMeta,
): void {
  const max = Math.min(MAX_KEY_LENGTH, host.backend(backend).capabilities.maxKeyLength);
  const length = host.keyPrefix.length + longest.length;
  if (length <= max) return;
  const layout = `<key>#<permit>, a semaphore over plain locks`;
  if (meta?.keyTemplate !== undefined)
    throw new LockKeyResolutionError(
      meta.keyTemplate,
      `its permit keys (${layout}) reach ${length} characters with the prefix, more than ${max}`,
    );
  throw new InvalidLockOptionsError(
    'key',
    key,
    `a key whose permit keys (${layout}) stay within ${max} characters with the prefix (got ${length})`,
    key,
  );
}

export async function acquirePermit(
  host: RecipeHost,
  key: string,
  permits: number,
  options: LockOptions,
  meta?: AcquireMeta,
): Promise<LockHandle> {
  const o = host.resolveOptions({ ...options, permits: undefined }, key);
  const keys = Array.from({ length: permits }, (_, i) => permitKey(key, i));
  const last = keys[keys.length - 1];
  const record = permitsKey(key);
  checkPermitKeys(host, key, last.length > record.length ? last : record, o.backend, meta);
  const once: LockOptions = { ...options, permits: undefined, wait: 0 };
  const wrap = (permit: LockHandle) => compositeHandle(new CompositeLease([permit], o.ttl, [key]));
  /** A new permit, with the permits record beside it (its holders' N checked). */
  const granted = async (permit: LockHandle) => {
    const parts = await agreeOnPermits(host, { key, permits, backend: o.backend, permit, once });
    return compositeHandle(new CompositeLease(parts, o.ttl, [key]));
  };
  // Re-entrant: this context already holds one of the permits.
  const mine = keys.find((s) => host.current(s, o.backend));
  if (mine) return wrap(await host.acquireOne({ key: mine, options: once }));
  const wakeups = host.backend(o.backend).wakeups;
  const deadline = performance.now() + o.wait;
  let delay = 10;
  // As the engine's own wait: a permit attempt that fails (backend unreachable) is retried while
  // the budget lasts; at the deadline the last failure surfaces, not a timeout (fail closed).
  const round = { failure: undefined as unknown };
  // The wait also ends when the request it runs for ends (a client that leaves), as a lock's wait
  // does (Acquisition.onWait): combined once, when the first round finds every permit busy.
  let signal: AbortSignal | undefined;
  let armed = false;
  let checked = false;
  for (;;) {
    const listeners = wakeups ? keys.map((s) => wakeups.listen(host.keyPrefix + s)) : [];
    try {
      const permit = await tryEveryPermit(host, keys, once, round);
      if (permit) return granted(permit);
      // Every permit busy: holders of another N refuse this request rather than keep it waiting.
      if (!checked) {
        checked = true;
        await checkPermitsRecord(host, key, permits, host.backend(o.backend));
      }
      const left = deadline - performance.now();
      if (left <= 0) throw round.failure ?? new LockAcquireTimeoutError(key, o.wait);
      if (!armed) {
        armed = true;
        signal = meta?.requestSignal ? meta.requestSignal(options.signal) : options.signal;
      }
      signal?.throwIfAborted();
      const sleep = Math.min(left, listeners.length ? 1_000 : Math.random() * delay);
      delay = Math.min(delay * 2, 500);
      await firstOf(listeners, sleep, signal);
      signal?.throwIfAborted();
    } finally {
      for (const l of listeners) l.dispose();
    }
  }
}

/** One round: each permit once, from a random start; its handle, or null when all are busy. */
async function tryEveryPermit(
  host: RecipeHost,
  keys: readonly string[],
  once: LockOptions,
  round: { failure: unknown },
): Promise<LockHandle | null> {
  const start = Math.floor(Math.random() * keys.length);
  for (let n = 0; n < keys.length; n++) {
    try {
      return await host.acquireOne({ key: keys[(start + n) % keys.length], options: once });
    } catch (error) {
      if (error instanceof LockBackendUnavailableError) round.failure = error;
      else if (!(error instanceof LockAcquireTimeoutError)) throw error;
    }
  }
  return null;
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
