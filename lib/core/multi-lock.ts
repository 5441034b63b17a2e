import { randomBytes } from 'node:crypto';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type {
  BackendAcquireResult,
  LockBackend,
  LockMode,
} from '../interfaces/lock-backend.interface';
import type { LockOptions } from '../interfaces/lock-options.interface';
import { LockHandle, type HandleLease, type LeaseOps } from './lock-handle';
import type { LeaseState } from './lock-lease';
import type { LockLostError } from '../errors/lock-lost.error';
import { compileLockKey, type CompiledLockKey, type LockKey } from './lock-key';

/** One key, or several taken together as one all-or-nothing grant. */
export type LockKeys = string | readonly string[];

/** The part of the engine a multi-key acquire uses. */
export interface MultiLockEngine {
  readonly keyPrefix: string;
  acquire(key: string, options?: LockOptions): Promise<LockHandle>;
  resolveOptions(
    options: LockOptions | undefined,
    key?: string,
  ): { ttl: number; wait: number; backend: string; mode: LockMode };
  backend(name?: string): LockBackend;
  current(key?: string, backend?: string): LockHandle | undefined;
}

/**
 * Option (a symbol: never user input) on the per-key acquire of a multi-key grant the backend made
 * in one step (tryAcquireAll): the engine wraps that grant in a lease instead of attempting.
 */
export const PREGRANTED = Symbol('multi-key grant');
export interface PreGrant {
  readonly owner: string;
  readonly result: BackendAcquireResult;
}

/** A later key gets at least this much of the shared deadline, or one try (wait 0). */
const MIN_SLICE_MS = 50;

/** Deduplicated keys in the one canonical order every process uses (UTF-16 code unit order). */
export function canonicalKeys(keys: readonly unknown[]): string[] {
  if (keys.length === 0)
    throw new InvalidLockOptionsError('key', keys, 'a key, or a non-empty array of keys');
  for (const k of keys) {
    if (typeof k !== 'string' || k.length === 0)
      throw new InvalidLockOptionsError('key', k, 'non-empty strings in the key array');
  }
  return [...new Set(keys as string[])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Multi-key lock: every key or none. Keys are deduplicated and taken one at a time in canonical
 * order under ONE wait deadline, so two callers locking the same keys in opposite orders cannot
 * deadlock (both take the lower key first; the second waits there holding nothing). If any key
 * cannot be had by the deadline (or fails), whatever was taken is released before the error
 * surfaces. The grant is one handle: `keys`, a fencing token per key, one signal that aborts when
 * any key is lost, one release. Each key is an ordinary lock underneath (watchdog, reentrancy).
 */
export async function acquireAll(
  engine: MultiLockEngine,
  keys: readonly string[],
  options?: LockOptions,
): Promise<LockHandle> {
  const ordered = canonicalKeys(keys);
  if (ordered.length === 1) return engine.acquire(ordered[0], options);
  const { ttl, wait } = engine.resolveOptions(options, ordered.join(', '));
  const deadline = performance.now() + wait;
  const atOnce = await acquireAtOnce(engine, ordered, options);
  if (atOnce) return new LockHandle(new CompositeLease(atOnce, ttl), COMPOSITE_OPS);
  const taken: LockHandle[] = [];
  try {
    for (const key of ordered) {
      // Out of budget (or nearly): one last try instead of a wait too short for a round trip.
      const left = Math.floor(deadline - performance.now());
      taken.push(await engine.acquire(key, { ...options, wait: left < MIN_SLICE_MS ? 0 : left }));
    }
  } catch (error) {
    await Promise.all(taken.map((h) => h.release().catch(() => undefined)));
    throw error;
  }
  return new LockHandle(new CompositeLease(taken, ttl), COMPOSITE_OPS);
}

/**
 * The one-step path: a backend with tryAcquireAll grants every key at once (Redis: one script).
 * Taken only when no key is already held by this context (re-entry is per key); when the backend
 * cannot batch these keys, or a key is busy, the caller falls back to the canonical-order path
 * (which waits, under the same deadline). Each grant then becomes an ordinary per-key lease
 * (watchdog, owner-checked release, loss signal); if wrapping fails, every grant is given back.
 */
async function acquireAtOnce(
  engine: MultiLockEngine,
  keys: readonly string[],
  options: LockOptions | undefined,
): Promise<LockHandle[] | undefined> {
  const o = engine.resolveOptions(options, keys.join(', '));
  const backend = engine.backend(o.backend);
  if (!backend.tryAcquireAll || keys.some((k) => engine.current(k, o.backend))) return undefined;
  options?.signal?.throwIfAborted();
  const signal = new AbortController().signal;
  const requests = keys.map((k) => ({
    key: engine.keyPrefix + k,
    owner: randomBytes(16).toString('hex'),
    mode: o.mode,
    ttl: o.ttl,
    signal,
    onLost: () => undefined,
  }));
  const results = await backend.tryAcquireAll(requests);
  if (!results || !results.every((r) => r.acquired)) return undefined;
  const taken: LockHandle[] = [];
  try {
    for (const [i, key] of keys.entries()) {
      const pre: PreGrant = { owner: requests[i].owner, result: results[i] };
      taken.push(
        await engine.acquire(key, { ...options, wait: 0, [PREGRANTED]: pre } as LockOptions),
      );
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

/**
 * One grant made of the handles of its keys (canonical order). `names` are the keys the holder
 * sees (a semaphore's seat is shown under the semaphore's key); default: each part's own key.
 */
export class CompositeLease implements HandleLease {
  released = false;
  private readonly controller = new AbortController();
  private readonly names: readonly string[];

  constructor(
    readonly parts: readonly LockHandle[],
    public ttl: number,
    names?: readonly string[],
  ) {
    this.names = names ?? parts.map((p) => p.key);
    for (const part of parts) {
      const lost = () => this.controller.abort(part.signal.reason);
      if (part.signal.aborted) lost();
      else part.signal.addEventListener('abort', lost, { once: true });
    }
  }

  get key(): string {
    return this.names[0];
  }

  get keys(): readonly string[] {
    return this.names;
  }

  get mode(): LockMode {
    return this.parts[0].mode;
  }

  get fencingToken(): bigint {
    return this.parts[0].fencingToken;
  }

  get fencingTokens(): ReadonlyMap<string, bigint> {
    return new Map(this.parts.map((p, i) => [this.names[i], p.fencingToken]));
  }

  get owner(): string {
    return this.parts[0].owner;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get state(): LeaseState {
    if (this.controller.signal.aborted) return 'lost';
    return this.released ? 'released' : 'held';
  }

  get lostError(): LockLostError | undefined {
    return this.state === 'lost' ? (this.controller.signal.reason as LockLostError) : undefined;
  }

  /** Reading each part's `held` runs its synchronous expiry check; a lapsed part aborts this signal. */
  checkExpiry(): void {
    for (const part of this.parts) void part.held;
  }
}

export const COMPOSITE_OPS: LeaseOps<CompositeLease> = {
  async extend(lease, ttl) {
    await Promise.all(lease.parts.map((p) => p.extend(ttl)));
    lease.ttl = ttl;
  },
  async release(lease) {
    lease.released = true;
    const results = await Promise.allSettled(lease.parts.map((p) => p.release()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  },
};

/** A compiled template, or a compiled array of templates (a multi-key @Locked). */
export interface CompiledLockKeys {
  readonly template: string;
  resolve(args: readonly unknown[]): string | string[];
}

/** Compiles `key` or each template of a key array against the method's parameters. */
export function compileLockKeys(
  key: LockKey | readonly string[],
  paramNames: readonly (string | null)[],
  where: string,
): CompiledLockKeys {
  if (!Array.isArray(key)) return compileLockKey(key as LockKey, paramNames, where);
  if (key.length === 0)
    throw new InvalidLockOptionsError('key', key, `a non-empty array of key templates (${where})`);
  const parts: CompiledLockKey[] = key.map((k) => compileLockKey(k, paramNames, where));
  return {
    template: parts.map((p) => p.template).join(', '),
    resolve: (args) => parts.map((p) => p.resolve(args)),
  };
}
