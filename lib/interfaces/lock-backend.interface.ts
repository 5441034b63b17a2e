/**
 * The contract between the core engine and a backend (version 2). The core owns policy and waiting
 * (owner tokens, option validation, deadlines, cancellation, the local FIFO line per key, wake-ups
 * and timed retries, reentrancy, the watchdog, handles); a backend owns mechanics: how ONE attempt
 * takes a lock on its system, how it is renewed and released, and optionally how waiters learn of a
 * release (a wake-up source), or how the system queues them (a busy answer's wake, and leave:
 * Redis, etcd, ZooKeeper). Backends import only `nestjs-distributed-lock/backend-kit` (this
 * contract, WAIT_DEADLINE, the option checker, key encoding, validity and token helpers) and the
 * errors.
 */
export type LockMode = 'exclusive' | 'shared';

export interface LockBackendCapabilities {
  /**
   * Shared (read) mode is supported. A backend without it gets InvalidLockOptionsError from the
   * core.
   */
  readonly shared: boolean;
  /**
   * 'strict': within one key every new exclusive grant has a larger token than every grant before
   * it. 'best-effort': tokens usually grow but the system cannot promise it (Redlock).
   */
  readonly fencing: 'strict' | 'best-effort';
  /**
   * true when locks live as long as a backend session (etcd lease, ZooKeeper session) rather than a
   * per-lock ttl; the watchdog still calls renew(), which such a backend may use to verify
   * ownership.
   */
  readonly sessionBased: boolean;
  /** Longest full key (prefix included) the backend accepts, in characters. */
  readonly maxKeyLength: number;
  /**
   * Smallest ttl (ms) that works on this backend (Redlock: leaves validity after drift). Checked at
   * start-up against defaults.ttl, and per call.
   */
  readonly minTtl?: number;
}

/** Identifies one grant: the full key, the 128-bit owner token, and the mode. */
export interface BackendLock {
  readonly key: string;
  readonly owner: string;
  readonly mode: LockMode;
  /** Time to live in ms the backend should give the lock (on acquire and on each renewal). */
  readonly ttl: number;
}

/**
 * Who asks for a grant: the app's host, pid and instance name (the module's `instance` option). A
 * backend stores it with the grant where it writes anyway (a value, node data, a row), with the
 * kit's holderData(), and reports it from inspect() as a holder's metadata (holderMetadata()).
 */
export interface LockHolderIdentity {
  readonly host: string;
  readonly pid: number;
  readonly instance: string;
}

/** One attempt: a BackendLock plus the signals the engine gives every call that may grant it. */
export interface BackendAttempt extends BackendLock {
  /**
   * ms the caller may wait in all (0 or absent: one attempt, never queued). A backend with `leave`
   * may queue a request with wait > 0 in its system's own queue (see LockBackend.leave).
   */
  readonly wait?: number;
  /** Who asks (set by the engine; absent when a caller outside the engine builds the attempt). */
  readonly holder?: LockHolderIdentity;
  /**
   * Aborts when the engine gives up: reason WAIT_DEADLINE (from the backend kit) at the wait
   * deadline, the caller's own reason on a cancel. An attempt still in flight may then answer
   * `{ acquired: false }` early; a request queued in the system leaves it through `leave`.
   */
  readonly signal: AbortSignal;
  /**
   * Session-based backends call this when they learn that a granted lock is gone (session expired,
   * lease revoked, node deleted). Safe to call more than once; ignored before the grant or after
   * release.
   */
  readonly onLost: (reason: string, cause?: unknown) => void;
}

/** An attempt as the engine makes it: its wait is always known. */
export interface BackendAcquireRequest extends BackendAttempt {
  /** ms the caller may wait in all (0: one attempt). */
  readonly wait: number;
}

/**
 * Optional native semaphores (LockService `permits: N`): at most N holders of one key at once.
 * A backend without it gets permit locks from the semaphore recipe (`<key>#<i>`, one per permit).
 * A request is granted only while fewer than its own `permits` hold the key (Curator's rule); each
 * grant's fencing token is larger than every earlier grant's of the key. Permits are exclusive.
 */
export interface SemaphoreBackend {
  /** ONE attempt at a permit, as LockBackend.tryAcquire. */
  tryAcquire(request: BackendAttempt, permits: number): Promise<BackendAcquireResult>;
  /** Takes a waiter that gave up out of the system's queue, as LockBackend.leave. */
  leave?(request: BackendAttempt): Promise<void>;
  /** Renews held permits, as LockBackend.renew. */
  renew(permits: readonly BackendLock[]): Promise<boolean[]>;
  /** Owner-checked release of a permit, as LockBackend.release. */
  release(permit: BackendLock): Promise<void>;
}

/**
 * Optional leader-election layout (LockService.campaign, key `election:<name>`): the backend stores
 * the grant as its ecosystem's own election does, with the candidate's proposal as its value, so
 * other tools' candidates compete with ours (etcd: concurrency.Election / `etcdctl elect`;
 * ZooKeeper: Curator's LeaderLatch). A term is renewed and released as a lock (LockBackend.renew,
 * release). A backend without it holds the election as a plain lock of the key.
 */
export interface ElectionBackend {
  tryAcquire(request: BackendAttempt, proposal: string): Promise<BackendAcquireResult>;
  /** Takes a candidate that gave up out of the system's queue, as LockBackend.leave. */
  leave?(request: BackendAttempt): Promise<void>;
}

/** Waits for a release of one key; see WakeupSource.listen. */
export interface ReleaseListener {
  /**
   * Resolves on a release of the key, after `ms`, or when `signal` aborts; then stops listening.
   */
  wait(ms: number, signal: AbortSignal): Promise<void>;
  /** Stops listening without waiting. */
  dispose(): void;
}

/**
 * How a backend tells the engine's waiters that a key was released (Redis pub/sub, PostgreSQL
 * NOTIFY, an in-process event). The engine listens BEFORE each attempt, so a release between a
 * failed attempt and the sleep is never missed. ReleaseNotifier from the kit implements it.
 */
export interface WakeupSource {
  /**
   * Called once before a waiter first sleeps (e.g. to subscribe); a rejection falls back to
   * polling.
   */
  prepare?(key: string): Promise<void>;
  listen(key: string): ReleaseListener;
}

/** Tuning of the engine's wait loop for one backend (all ms). */
export interface BackendWaitPolicy {
  /** First poll delay (doubles up to maxDelay, with full jitter). Default 10. */
  readonly minDelay?: number;
  /** Largest poll delay. Default 500. */
  readonly maxDelay?: number;
  /**
   * With wake-ups: re-attempt at least this often, so a lost notification cannot strand a waiter.
   * Default 1000.
   */
  readonly fallbackDelay?: number;
}

export type BackendAcquireResult =
  | {
      readonly acquired: true;
      readonly fencingToken: bigint;
      /** ms from `sentAt` for which the grant is valid, when less than ttl (Redlock). */
      readonly validity?: number;
      /**
       * performance.now() when the request that granted the lock was sent; the engine dates the
       * grant's validity from it. pollAcquire sets it. Default: the start of the acquire call for
       * TTL backends (safe: never later than the grant), the moment of the answer for session-based
       * ones.
       */
      readonly sentAt?: number;
    }
  | {
      readonly acquired: false;
      /** ms until the lock is expected to be free, when known (drives Retry-After). */
      readonly retryAfter?: number;
      /**
       * The system queued the request (see LockBackend.leave) and will say when to attempt again
       * (a handoff, a watch): the engine waits on this, not on `wakeups`, bounded by the policy's
       * fallbackDelay and retryAfter. Its dispose() only says the engine stopped listening: the
       * queue entry ends at the grant or in leave.
       */
      readonly wake?: ReleaseListener;
    };

/** One holder of a key, as far as the backend can tell. */
export interface LockHolderInfo {
  readonly mode: LockMode;
  /** The holder's owner token, where the backend stores it. */
  readonly owner?: string;
  /**
   * ms until the holder's grant expires unless renewed (ttl backends); undefined for session-based
   * ones.
   */
  readonly remainingTtl?: number;
  /**
   * What the grant stored about its holder, where the backend can: `host`, `pid` and `instance`
   * (LockHolderIdentity, from holderMetadata()), or `data` when another client wrote the grant.
   */
  readonly metadata?: Readonly<Record<string, string>>;
}

/** What `inspect(key)` reports about one key. */
export interface LockInspection {
  /** The full key (prefix included). */
  readonly key: string;
  readonly held: boolean;
  /** 'exclusive', 'shared', or undefined when free. */
  readonly mode?: LockMode;
  readonly holders: readonly LockHolderInfo[];
  /** The last fencing token issued for the key, where the backend keeps it. */
  readonly fencingToken?: bigint;
  /** Waiters the backend knows of (queue entries, contenders); undefined when it cannot tell. */
  readonly waiters?: number;
}

/**
 * A lock backend. Every method that talks to the system must reject (with
 * LockBackendUnavailableError, or any error: the core wraps it) when the system cannot be reached;
 * the core bounds every call by the caller's budget, so a backend need not add its own timeouts.
 */
export interface LockBackend {
  /** Short name used in errors and logs ('memory', 'redis', ...). */
  readonly name: string;
  readonly capabilities: LockBackendCapabilities;

  /**
   * ONE attempt, no waiting: grant the lock now or answer busy (with retryAfter when the holder's
   * remaining ttl is known; with `wake` when it queued the request, see leave). The engine runs
   * every wait on top of it: a FIFO line per key in this process
   * (only its head attempts; none with `leave`), woken by the busy answer's wake, `wakeups`, the
   * retryAfter or a jittered backoff, until the deadline or a cancel.
   */
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult>;

  /** Optional wake-ups for waiters (see WakeupSource); without them the engine polls. */
  readonly wakeups?: WakeupSource;

  /** Optional tuning of the engine's wait loop. */
  readonly waitPolicy?: BackendWaitPolicy;

  /**
   * Optional: the backend queues waiters in its system (Redis's queue with direct handoff, etcd's
   * revisions and ZooKeeper's sequential nodes with a watch on the one waited for). With it,
   * tryAcquire of a request with wait > 0 may join that queue and answer busy with a `wake`; the
   * engine then runs no local line for the backend's waiters (the backend orders them), waits on
   * the wake,
   * attempts again (the backend knows the request by its owner: that attempt re-checks its place)
   * and, when the wait ends without a grant (deadline, cancel, failure), calls leave once the last
   * attempt settled. leave takes the request out of the queue and gives back a grant that raced
   * with the giving up; it resolves promptly (the engine awaits it) and never rejects.
   */
  leave?(request: BackendAttempt): Promise<void>;

  /**
   * Optional multi-key grant in ONE step (a key array: LockService.acquire(['a', 'b'])): all the
   * requests (distinct keys, one mode, one owner each) are granted together, or none is. Resolves
   * one result per request, in order: every one acquired (each with its own fencing token, as
   * tryAcquire would give it), or none acquired (busy ones with retryAfter) with nothing left
   * behind. Resolves null when it cannot take THESE keys in one step (Redis Cluster: keys in
   * several hash slots); the engine then takes them one at a time in canonical order, as it does
   * for backends without this method and whenever the one-step attempt finds a key busy and the
   * caller may wait. Never queues, never waits. The requests' onLost is a no-op (the leases do not
   * exist yet): a session-based backend should not implement this.
   */
  tryAcquireAll?(requests: readonly BackendAttempt[]): Promise<BackendAcquireResult[] | null>;

  /** Optional native semaphores (see SemaphoreBackend). */
  readonly semaphore?: SemaphoreBackend;

  /** Optional leader-election layout (see ElectionBackend). */
  readonly election?: ElectionBackend;

  /**
   * Renew many held locks at once (the watchdog batches every due lock of this backend into one
   * call). Resolves one boolean per lock, in order: true = still ours and extended by its ttl,
   * false = gone or owned by someone else. Rejects when the backend cannot be reached.
   */
  renew(locks: readonly BackendLock[]): Promise<boolean[]>;

  /** Owner-checked release; releasing a lock that is not ours (or gone) is a no-op. */
  release(lock: BackendLock): Promise<void>;

  /** Optional operator view of one key (full key). Read-only; never blocks holders. */
  inspect?(key: string): Promise<LockInspection>;

  /**
   * Optional operator action: frees `key` (full key) whoever holds it; resolves true when something
   * was freed. Fencing keeps the old holder harmless: its next renewal finds the lock gone and its
   * handle's signal aborts with LockLostError.
   */
  forceRelease?(key: string): Promise<boolean>;

  /**
   * Optional operator listing: the full keys under `prefix` (full prefix) that are held now, at
   * most `limit` of them. Only for backends that can answer without scanning an unbounded keyspace.
   * An answer its own bound cut short (held keys may be missing) is marked with the kit's
   * markPartial (`partial: true`).
   */
  list?(prefix: string, limit: number): Promise<string[]>;

  /**
   * Optional health probe: one real round trip to the system (PING, a session check); rejects when
   * it cannot be reached. Without it the health check uses inspect() of a probe key, or a
   * tryAcquire + release of one.
   */
  ping?(): Promise<void>;

  /**
   * Stop the backend's own timers, subscriptions and sessions. Never closes a client the user owns.
   */
  close(): Promise<void>;
}
