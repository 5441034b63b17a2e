/**
 * Multi-key locks: every key or none, as one handle. A layer over the acquire pipeline: each key
 * is an ordinary lock (watchdog, reentrancy, loss signal); a backend's tryAcquireAll takes them in
 * one step where it can, and the pipeline turns those grants into leases.
 */
import type { LockHandle } from '../core/lease/lock-handle';
import type { LockOptions } from '../interfaces/lock-options.interface';
import type { AcquireMeta, RecipeHost } from '../core/recipe-host';
import { canonicalKeys } from '../core/keys/key-list';
import { newOwnerToken } from '../core/acquire/owner-token';
import { CompositeLease, compositeHandle } from './composite-lease';

/** A later key gets at least this much of the shared deadline, or one try (wait 0). */
const MIN_SLICE_MS = 50;

/**
 * Keys are deduplicated and taken one at a time in canonical order under ONE wait deadline, so two
 * callers locking the same keys in opposite orders cannot deadlock (both take the lower key first;
 * the second waits there holding nothing). If any key cannot be had by the deadline (or fails),
 * whatever was taken is released before the error surfaces. The grant is one handle: `keys`, a
 * fencing token per key, one signal that aborts when any key is lost, one release.
 */
export async function acquireAll(
  host: RecipeHost,
  keys: readonly string[],
  options?: LockOptions,
  meta?: AcquireMeta,
): Promise<LockHandle> {
  const ordered = canonicalKeys(keys);
  if (ordered.length === 1) return host.acquireOne({ key: ordered[0], options, ...meta });
  const { ttl, wait } = host.resolveOptions(options, ordered.join(', '));
  const deadline = performance.now() + wait;
  const atOnce = await acquireAtOnce(host, ordered, options, meta);
  if (atOnce) return compositeHandle(new CompositeLease(atOnce, ttl));
  const taken: LockHandle[] = [];
  try {
    for (const key of ordered) {
      // Out of budget (or nearly): one last try instead of a wait too short for a round trip.
      const left = Math.floor(deadline - performance.now());
      const slice = { ...options, wait: left < MIN_SLICE_MS ? 0 : left };
      taken.push(await host.acquireOne({ key, options: slice, ...meta }));
    }
  } catch (error) {
    await Promise.all(taken.map((h) => h.release().catch(() => undefined)));
    throw error;
  }
  return compositeHandle(new CompositeLease(taken, ttl));
}

/**
 * The one-step path: a backend with tryAcquireAll grants every key at once (Redis: one script).
 * Taken only when no key is already held by this context (re-entry is per key); when the backend
 * cannot batch these keys, or a key is busy, the caller falls back to the canonical-order path.
 * Each grant then becomes an ordinary lease through the pipeline; if that fails, every grant is
 * given back.
 */
async function acquireAtOnce(
  host: RecipeHost,
  keys: readonly string[],
  options: LockOptions | undefined,
  meta: AcquireMeta | undefined,
): Promise<LockHandle[] | undefined> {
  const o = host.resolveOptions(options, keys.join(', '));
  const backend = host.backend(o.backend);
  if (!backend.tryAcquireAll || keys.some((k) => host.current(k, o.backend))) return undefined;
  options?.signal?.throwIfAborted();
  const signal = new AbortController().signal;
  const requests = keys.map((k) => ({
    key: host.keyPrefix + k,
    owner: newOwnerToken(),
    mode: o.mode,
    ttl: o.ttl,
    signal,
    onLost: () => undefined,
  }));
  const results = await backend.tryAcquireAll(requests);
  if (!results || !results.every((r) => r.acquired)) return undefined;
  const taken: LockHandle[] = [];
  const once = { ...options, wait: 0 };
  try {
    for (const [i, key] of keys.entries()) {
      const granted = { owner: requests[i].owner, result: results[i] };
      taken.push(await host.acquireOne({ key, options: once, granted, ...meta }));
    }
    return taken;
  } catch (error) {
    await Promise.all([
      ...taken.map((h) => h.release().catch(() => undefined)),
      ...requests.slice(taken.length).map((r) => backend.release(r).catch(() => undefined)),
    ]);
    throw error;
  }
}
