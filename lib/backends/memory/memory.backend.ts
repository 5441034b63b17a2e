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
  type LockMode,
  type SemaphoreBackend,
} from '../../backend-kit';
import { SteadyMap } from '../../backend-kit/steady-collections';

/** The last fencing token handed out by any MemoryLockBackend of this process. */
let lastFencingToken = 0n;

/** What one holder of a key holds: the key's lock in a mode, or one permit of its semaphore. */
type Kind = LockMode | 'permit';

/** One grant on a key, named by its owner token. */
interface Holder {
  readonly owner: string;
  readonly kind: Kind;
  expiresAt: number;
  /** Who holds it (inspect's metadata). */
  readonly who?: LockHolderIdentity;
}

/**
 * One key: its holders in grant order, deleted with the last. A list, not a map by owner: most keys
 * have one holder, every access already scans them all for expiry, and a Map per key costs the
 * uncontended cycle about 5 %. The core draws an owner token (128 random bits) per grant, so a lock
 * and a permit of one key never share an owner.
 */
class KeyState {
  holders: Holder[] = [];
  /** The N the permit holders agreed on. */
  permits?: number;
  /** The latest lock grant's token and the latest permit grant's (inspect). */
  lockToken?: bigint;
  permitToken?: bigint;
}

/** Whether a live holder of kind `held` counts against a request of kind `wanted` (see grant). */
const conflicts = (wanted: Kind, held: Kind): boolean =>
  wanted === 'permit'
    ? held === 'permit'
    : held !== 'permit' && (wanted === 'exclusive' || held === 'exclusive');

export interface MemoryLockBackendOptions {
  /** Clock in ms (monotonic); injectable for tests. Default performance.now. */
  now?: () => number;
}

/**
 * In-process locks: the embedded default and the reference implementation of the backend contract.
 *
 * Algorithm: one state per key holds its lock holders (one exclusive or many shared) and the
 * permits of its semaphore (the `semaphore` extension), each with an expiry on the monotonic
 * clock; expired holders are purged lazily on every access. Every grant, of either kind, follows
 * one rule (`grant`: fewer conflicting live holders than the request's limit). `tryAcquire` is
 * one synchronous check-and-set, so it is atomic by construction (one event loop). Waiters are
 * the engine's: it queues them per key and wakes the head through `wakeups` (fired by release and
 * by a holder's expiry). Safety: every check and change of a key happens in one synchronous step;
 * fencing tokens come from ONE process-wide counter, so within a key every grant's token is larger
 * than every earlier grant's (across holders, expiry and backend instances) while the state kept
 * per key ends with its last holder: a key's state is deleted when it is free, so a million
 * request ids leave nothing behind. Scope: one process; use a networked backend for several.
 */
export class MemoryLockBackend implements LockBackend {
  readonly name = 'memory';
  readonly capabilities: LockBackendCapabilities = {
    shared: true,
    fencing: 'strict',
    sessionBased: false,
    maxKeyLength: MAX_KEY_LENGTH,
  };
  private readonly keys = new SteadyMap<string, KeyState>();
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
    return this.grant(request, request.mode, 1);
  }

  /** Native semaphores: permits of one key, granted while fewer than the holders' agreed N hold. */
  readonly semaphore: SemaphoreBackend = {
    tryAcquire: async (request, permits) => this.grant(request, 'permit', permits),
    renew: async (held) => this.extend(held, 'permit'),
    release: async (permit) => this.drop(permit, 'permit'),
  };

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    return this.extend(locks);
  }

  async release(lock: BackendLock): Promise<void> {
    this.drop(lock, lock.mode);
  }

  async close(): Promise<void> {
    this.notifier.notifyAll();
  }

  /** Deletes a key's lock behind its holders' backs (tests, admin tooling: an operator's DEL). */
  forceDelete(key: string): void {
    const state = this.keys.get(key);
    if (state) state.holders = state.holders.filter((h) => h.kind === 'permit');
    if (state?.holders.length === 0) this.keys.delete(key);
    this.notifier.notify(key);
  }

  /**
   * The one grant rule, as Curator's maxLeases: a request is granted while the live holders it
   * conflicts with are fewer than its limit. An exclusive lock conflicts with every lock holder and
   * a shared one with the exclusive holder only, limit 1; a permit conflicts with every permit,
   * limit N, the N its holders agreed on (another N while permits are held is refused, so no two
   * limits are ever counted against one set of holders). Locks and permits of one key never
   * conflict, as in the SQL backends and the core's permit-lock semaphores. A refusal's retryAfter
   * is the ms until enough conflicting holders expire for the request to fit: with c of them and
   * limit L, the (c - L + 1)-th earliest expiry (a lock: the last blocker's; a full semaphore: the
   * first permit's).
   */
  private grant(request: BackendAttempt, kind: Kind, limit: number): BackendAcquireResult {
    const now = this.now();
    const state = this.live(request.key, now) ?? new KeyState();
    const blockers: number[] = [];
    for (const h of state.holders) if (conflicts(kind, h.kind)) blockers.push(h.expiresAt);
    if (kind === 'permit' && blockers.length > 0 && state.permits !== limit)
      throw new InvalidLockOptionsError(
        'permits',
        limit,
        `${state.permits} (the permits this semaphore's holders use)`,
        request.key,
      );
    if (blockers.length >= limit) {
      blockers.sort((a, b) => a - b);
      return { acquired: false, retryAfter: Math.ceil(blockers[blockers.length - limit] - now) };
    }
    const token = ++lastFencingToken;
    const held = { owner: request.owner, kind, expiresAt: now + request.ttl, who: request.holder };
    // A shared lock or permit its owner asks for again is renewed in place, not counted twice.
    const i = state.holders.findIndex((h) => h.owner === request.owner);
    if (i < 0) state.holders.push(held);
    else state.holders[i] = held;
    if (kind === 'permit') [state.permits, state.permitToken] = [limit, token];
    else state.lockToken = token;
    this.keys.set(request.key, state);
    return { acquired: true, fencingToken: token };
  }

  /** Renews each grant still held by its owner in its kind (a lock's mode unless `kind`). */
  private extend(held: readonly BackendLock[], kind?: Kind): boolean[] {
    const now = this.now();
    return held.map((lock) => {
      const wanted = kind ?? lock.mode;
      const holders = this.live(lock.key, now)?.holders ?? [];
      const h = holders.find((x) => x.owner === lock.owner && x.kind === wanted);
      if (!h) return false;
      h.expiresAt = now + lock.ttl;
      return true;
    });
  }

  /** Owner-checked release of one grant of `kind`; waiters wake. */
  private drop(lock: BackendLock, kind: Kind): void {
    const holders = this.keys.get(lock.key)?.holders ?? [];
    const i = holders.findIndex((h) => h.owner === lock.owner && h.kind === kind);
    if (i < 0) return;
    if (holders.length === 1) this.keys.delete(lock.key);
    else holders.splice(i, 1);
    this.notifier.notify(lock.key);
  }

  /** The key's state with expired holders purged (waking waiters when any expired), if held. */
  private live(key: string, now: number): KeyState | undefined {
    const state = this.keys.get(key);
    if (!state) return undefined;
    const live = state.holders.filter((h) => h.expiresAt > now);
    if (live.length < state.holders.length) queueMicrotask(() => this.notifier.notify(key));
    state.holders = live;
    if (live.length > 0) return state;
    this.keys.delete(key);
    return undefined;
  }

  /** Operator view of one key: holders (owner, identity, remaining ttl), the last fencing token. */
  async inspect(key: string): Promise<LockInspection> {
    const now = this.now();
    const state = this.live(key, now);
    const holders: LockHolderInfo[] = [];
    const permits: LockHolderInfo[] = [];
    for (const h of state?.holders ?? []) {
      const remainingTtl = Math.max(0, Math.ceil(h.expiresAt - now));
      if (h.kind === 'permit') permits.push({ mode: 'exclusive', owner: h.owner, remainingTtl });
      else
        holders.push({
          mode: h.kind,
          owner: h.owner,
          remainingTtl,
          metadata: holderMetadata(holderData(h.who)),
        });
    }
    // A key with permits reads as a semaphore, its lock holders listed first. Waiters live in the
    // engine's line (LockService.inspect adds this process's), not here.
    const semaphore = permits.length > 0;
    holders.push(...permits);
    return {
      key,
      held: holders.length > 0,
      mode: semaphore ? 'exclusive' : holders[0]?.mode,
      holders,
      fencingToken: semaphore ? state?.permitToken : state?.lockToken,
    };
  }

  /** Frees the key whoever holds it; the holders' next renewals find it gone. Waiters wake. */
  async forceRelease(key: string): Promise<boolean> {
    const held = this.live(key, this.now()) !== undefined;
    this.keys.delete(key);
    this.notifier.notify(key);
    return held;
  }

  /** Held keys under `prefix` (a scan of this process's map: bounded by what it holds). */
  async list(prefix: string, limit: number): Promise<string[]> {
    const now = this.now();
    const keys: string[] = [];
    for (const key of [...this.keys.keys()]) {
      if (keys.length >= limit) break;
      if (key.startsWith(prefix) && this.live(key, now)) keys.push(key);
    }
    return keys;
  }

  /** Always reachable (in-process). */
  async ping(): Promise<void> {}
}
