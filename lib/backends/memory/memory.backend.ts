import {
  checkOptionsObject,
  holderData,
  holderMetadata,
  InvalidLockOptionsError,
  MAX_KEY_LENGTH,
  ReleaseNotifier,
  type BackendAttempt,
  type BackendAcquireResult,
  type BackendLock,
  type LockBackend,
  type LockBackendCapabilities,
  type LockHolderIdentity,
  type LockHolderInfo,
  type LockInspection,
  type SemaphoreBackend,
} from '../../backend-kit';
import { SteadyMap } from '../../backend-kit/steady-collections';

/** The last fencing token handed out by any MemoryLockBackend of this process. */
let lastFencingToken = 0n;

interface Entry {
  writer?: { owner: string; expiresAt: number; holder?: LockHolderIdentity };
  /** Shared holders' expiry by owner; made with the first shared grant. */
  readers?: Map<string, number>;
  /** The token of the latest grant while the key is held (inspect); gone with the entry. */
  token?: bigint;
  who?: Map<string, LockHolderIdentity | undefined>; // shared holders' identities (inspect)
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
 * request ids leave nothing behind. Semaphores (the `semaphore` extension) keep their holders in a
 * map of their own per key with the N they agreed on; a request naming another N while permits are
 * held is refused with InvalidLockOptionsError. Scope: one process; use a networked
 * backend for several.
 */
export class MemoryLockBackend implements LockBackend {
  readonly name = 'memory';
  readonly capabilities: LockBackendCapabilities = {
    shared: true,
    fencing: 'strict',
    sessionBased: false,
    maxKeyLength: MAX_KEY_LENGTH,
  };
  private readonly entries = new SteadyMap<string, Entry>();
  /** Semaphores: holder owner -> expiry, and the holders' N, per key; deleted when empty. */
  private readonly semaphores = new Map<string, Semaphore>();
  private readonly notifier = new ReleaseNotifier();
  readonly wakeups = this.notifier;
  private readonly now: () => number;

  constructor(options: MemoryLockBackendOptions = {}) {
    const o = checkOptionsObject<MemoryLockBackendOptions>('MemoryLockBackend options', options, [
      'now',
    ]);
    if (o.now !== undefined && typeof o.now !== 'function') {
      throw new InvalidLockOptionsError('now', o.now, 'a function returning monotonic ms');
    }
    this.now = o.now ?? (() => performance.now());
  }

  async tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.attempt(request);
  }

  /** Native semaphores: permits of one key, granted while fewer than the holders' agreed N hold. */
  readonly semaphore: SemaphoreBackend = {
    tryAcquire: async (request, permits) => this.takePermit(request, permits, this.now()),
    renew: async (held) => {
      const now = this.now();
      return held.map((permit) => {
        const live = this.livePermits(permit.key, now);
        if (!live?.has(permit.owner)) return false;
        live.set(permit.owner, now + permit.ttl);
        return true;
      });
    },
    release: async (permit) => {
      const sem = this.semaphores.get(permit.key);
      if (!sem?.held.delete(permit.owner)) return;
      if (sem.held.size === 0) this.semaphores.delete(permit.key);
      this.notifier.notify(permit.key);
    },
  };

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    const now = this.now();
    return locks.map((lock) => {
      const entry = this.live(lock.key, now);
      if (lock.mode === 'exclusive') {
        if (entry?.writer?.owner !== lock.owner) return false;
        entry.writer.expiresAt = now + lock.ttl;
        return true;
      }
      if (!entry?.readers?.has(lock.owner)) return false;
      entry.readers.set(lock.owner, now + lock.ttl);
      return true;
    });
  }

  async release(lock: BackendLock): Promise<void> {
    const entry = this.entries.get(lock.key);
    if (!entry) return;
    if (lock.mode === 'exclusive' && entry.writer?.owner === lock.owner) entry.writer = undefined;
    else if (lock.mode === 'shared') {
      entry.readers?.delete(lock.owner);
      entry.who?.delete(lock.owner);
    } else return;
    if (!entry.writer && !entry.readers?.size) this.entries.delete(lock.key);
    this.notifier.notify(lock.key);
  }

  async close(): Promise<void> {
    this.notifier.notifyAll();
  }

  /** Deletes a key behind its holders' backs (tests, admin tooling: an operator's DEL). */
  forceDelete(key: string): void {
    this.entries.delete(key);
    this.notifier.notify(key);
  }

  private attempt(request: BackendAttempt): BackendAcquireResult {
    const now = this.now();
    const entry: Entry = this.live(request.key, now) ?? {};
    if (entry.writer)
      return { acquired: false, retryAfter: Math.ceil(entry.writer.expiresAt - now) };
    if (request.mode === 'exclusive') {
      if (entry.readers?.size)
        return {
          acquired: false,
          retryAfter: Math.ceil(Math.max(...entry.readers.values()) - now),
        };
      entry.writer = { owner: request.owner, expiresAt: now + request.ttl, holder: request.holder };
    } else {
      (entry.readers ??= new Map()).set(request.owner, now + request.ttl);
      (entry.who ??= new Map()).set(request.owner, request.holder);
    }
    this.entries.set(request.key, entry);
    entry.token = ++lastFencingToken;
    return { acquired: true, fencingToken: entry.token };
  }

  /** One permit of a semaphore: granted while fewer than `permits` (the holders' N) hold it. */
  private takePermit(request: BackendAttempt, permits: number, now: number): BackendAcquireResult {
    const held = this.livePermits(request.key, now);
    const agreed = held && held.size > 0 ? this.semaphores.get(request.key)?.permits : undefined;
    if (agreed !== undefined && agreed !== permits)
      throw new InvalidLockOptionsError(
        'permits',
        permits,
        `${agreed} (the permits this semaphore's holders use)`,
        request.key,
      );
    if (held && held.size >= permits)
      return { acquired: false, retryAfter: Math.ceil(Math.min(...held.values()) - now) };
    const token = ++lastFencingToken;
    const sem = this.semaphores.get(request.key) ?? { held: new Map(), token, permits };
    sem.permits = permits;
    sem.held.set(request.owner, now + request.ttl);
    sem.token = token;
    this.semaphores.set(request.key, sem);
    return { acquired: true, fencingToken: token };
  }

  /** A semaphore's holders with expired ones purged (waking waiters when any expired). */
  private livePermits(key: string, now: number): Map<string, number> | undefined {
    const sem = this.semaphores.get(key);
    if (!sem) return undefined;
    let freed = false;
    for (const [owner, expiresAt] of sem.held) {
      if (expiresAt <= now) {
        sem.held.delete(owner);
        freed = true;
      }
    }
    if (freed) queueMicrotask(() => this.notifier.notify(key));
    if (sem.held.size === 0) {
      this.semaphores.delete(key);
      return undefined;
    }
    return sem.held;
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
    for (const [owner, expiresAt] of entry.readers ?? []) {
      if (expiresAt <= now) {
        entry.readers!.delete(owner);
        entry.who?.delete(owner);
        freed = true;
      }
    }
    if (!entry.writer && !entry.readers?.size) {
      this.entries.delete(key);
      return undefined;
    }
    if (freed) queueMicrotask(() => this.notifier.notify(key));
    return entry;
  }

  /** Operator view of one key: holders (owner, identity, remaining ttl), the last fencing token. */
  async inspect(key: string): Promise<LockInspection> {
    const now = this.now();
    const entry = this.live(key, now);
    const fencingToken = entry?.token;
    const holders: LockHolderInfo[] = [];
    if (entry?.writer)
      holders.push({
        mode: 'exclusive',
        owner: entry.writer.owner,
        remainingTtl: Math.max(0, Math.ceil(entry.writer.expiresAt - now)),
        metadata: holderMetadata(holderData(entry.writer.holder)),
      });
    for (const [owner, expiresAt] of entry?.readers ?? [])
      holders.push({
        mode: 'shared',
        owner,
        remainingTtl: Math.max(0, Math.ceil(expiresAt - now)),
        metadata: holderMetadata(holderData(entry?.who?.get(owner))),
      });
    const held = this.livePermits(key, now);
    if (held) {
      for (const [owner, expiresAt] of held)
        holders.push({
          mode: 'exclusive',
          owner,
          remainingTtl: Math.max(0, Math.ceil(expiresAt - now)),
        });
      return {
        key,
        held: true,
        mode: 'exclusive',
        holders,
        fencingToken: this.semaphores.get(key)?.token,
      };
    }
    // Waiters live in the engine's line (LockService.inspect adds this process's), not here.
    return { key, held: holders.length > 0, mode: holders[0]?.mode, holders, fencingToken };
  }

  /** Frees the key whoever holds it; the holders' next renewals find it gone. Waiters wake. */
  async forceRelease(key: string): Promise<boolean> {
    const now = this.now();
    const held = this.live(key, now) !== undefined || this.livePermits(key, now) !== undefined;
    this.entries.delete(key);
    this.semaphores.delete(key);
    this.notifier.notify(key);
    return held;
  }

  /** Held keys under `prefix` (a scan of this process's map: bounded by what it holds). */
  async list(prefix: string, limit: number): Promise<string[]> {
    const now = this.now();
    const keys: string[] = [];
    for (const key of [...this.entries.keys()]) {
      if (keys.length >= limit) break;
      if (key.startsWith(prefix) && this.live(key, now)) keys.push(key);
    }
    for (const key of [...this.semaphores.keys()]) {
      if (keys.length >= limit) break;
      if (key.startsWith(prefix) && this.livePermits(key, now)) keys.push(key);
    }
    return keys;
  }

  /** Always reachable (in-process). */
  async ping(): Promise<void> {}
}

interface Semaphore {
  readonly held: Map<string, number>;
  token: bigint;
  /** The N every holder of the key uses. */
  permits: number;
}
