import {
  checkOptionsObject,
  InvalidLockOptionsError,
  MAX_KEY_LENGTH,
  ReleaseNotifier,
  type BackendAttempt,
  type BackendAcquireResult,
  type BackendLock,
  type LockBackend,
  type LockBackendCapabilities,
} from '../../backend-kit';

/** The last fencing token handed out by any MemoryLockBackend of this process. */
let lastFencingToken = 0n;

interface Entry {
  writer?: { owner: string; expiresAt: number };
  readers: Map<string, number>;
}

export interface MemoryLockBackendOptions {
  /** Clock in ms (monotonic); injectable for tests. Default performance.now. */
  now?: () => number;
}

/**
 * In-process locks: the embedded default and the reference implementation of the backend contract.
 *
 * Algorithm: one entry per key holds an exclusive owner or a set of shared owners, each with an
 * expiry on the monotonic clock; expired holders are purged lazily on every access. `tryAcquire`
 * is one synchronous check-and-set, so it is atomic by construction (one event loop). Waiters are
 * the engine's: it queues them per key and wakes the head through `wakeups` (fired by release and
 * by a holder's expiry). Safety: every check and change of a key happens in one synchronous step;
 * fencing tokens come from ONE process-wide counter, so within a key every grant's token is larger
 * than every earlier grant's (across holders, expiry and backend instances) while the state kept
 * per key ends with its last holder: a key's entry is deleted when it is free, so a million
 * request ids leave nothing behind. Scope: one process; use a networked backend for several.
 */
export class MemoryLockBackend implements LockBackend {
  readonly name = 'memory';
  readonly capabilities: LockBackendCapabilities = { shared: true, fencing: 'strict', sessionBased: false, maxKeyLength: MAX_KEY_LENGTH };
  private readonly entries = new Map<string, Entry>();
  private readonly notifier = new ReleaseNotifier();
  readonly wakeups = this.notifier;
  private readonly now: () => number;

  constructor(options: MemoryLockBackendOptions = {}) {
    const o = checkOptionsObject<MemoryLockBackendOptions>('MemoryLockBackend options', options, ['now']);
    if (o.now !== undefined && typeof o.now !== 'function') {
      throw new InvalidLockOptionsError('now', o.now, 'a function returning monotonic ms');
    }
    this.now = o.now ?? (() => performance.now());
  }

  async tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.attempt(request);
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    const now = this.now();
    return locks.map((lock) => {
      const entry = this.live(lock.key, now);
      if (lock.mode === 'exclusive') {
        if (entry?.writer?.owner !== lock.owner) return false;
        entry.writer.expiresAt = now + lock.ttl;
        return true;
      }
      if (!entry?.readers.has(lock.owner)) return false;
      entry.readers.set(lock.owner, now + lock.ttl);
      return true;
    });
  }

  async release(lock: BackendLock): Promise<void> {
    const entry = this.entries.get(lock.key);
    if (!entry) return;
    if (lock.mode === 'exclusive' && entry.writer?.owner === lock.owner) entry.writer = undefined;
    else if (lock.mode === 'shared') entry.readers.delete(lock.owner);
    else return;
    if (!entry.writer && entry.readers.size === 0) this.entries.delete(lock.key);
    this.notifier.notify(lock.key);
  }

  async close(): Promise<void> {
    this.notifier.notifyAll();
  }

  /** Deletes a key behind its holders' backs (tests and admin tooling: simulates an operator's DEL). */
  forceDelete(key: string): void {
    this.entries.delete(key);
    this.notifier.notify(key);
  }

  private attempt(request: BackendAttempt): BackendAcquireResult {
    const now = this.now();
    const entry = this.live(request.key, now) ?? { readers: new Map<string, number>() };
    if (entry.writer) return { acquired: false, retryAfter: Math.ceil(entry.writer.expiresAt - now) };
    if (request.mode === 'exclusive') {
      if (entry.readers.size > 0) return { acquired: false, retryAfter: Math.ceil(Math.max(...entry.readers.values()) - now) };
      entry.writer = { owner: request.owner, expiresAt: now + request.ttl };
    } else {
      entry.readers.set(request.owner, now + request.ttl);
    }
    this.entries.set(request.key, entry);
    return { acquired: true, fencingToken: ++lastFencingToken };
  }

  /** The key's entry with expired holders purged (waking waiters when any expired). */
  private live(key: string, now: number): Entry | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    let freed = false;
    if (entry.writer && entry.writer.expiresAt <= now) {
      entry.writer = undefined;
      freed = true;
    }
    for (const [owner, expiresAt] of entry.readers) {
      if (expiresAt <= now) {
        entry.readers.delete(owner);
        freed = true;
      }
    }
    if (!entry.writer && entry.readers.size === 0) {
      this.entries.delete(key);
      return undefined;
    }
    if (freed) queueMicrotask(() => this.notifier.notify(key));
    return entry;
  }
}
