/**
 * The contract between the core engine and a backend. The core owns policy (owner tokens, option
 * validation, deadlines, reentrancy, the watchdog, handles); a backend owns mechanics (how one
 * lock is taken, waited for, renewed and released on its system). Backends never import the Nest
 * layer.
 */
export type LockMode = 'exclusive' | 'shared';

export interface LockBackendCapabilities {
  /** Shared (read) mode is supported. A backend without it gets InvalidLockOptionsError from the core. */
  readonly shared: boolean;
  /**
   * 'strict': within one key every new exclusive grant has a larger token than every grant before it.
   * 'best-effort': tokens usually grow but the system cannot promise it (Redlock).
   */
  readonly fencing: 'strict' | 'best-effort';
  /**
   * true when locks live as long as a backend session (etcd lease, ZooKeeper session) rather than a
   * per-lock ttl; the watchdog still calls renew(), which such a backend may use to verify ownership.
   */
  readonly sessionBased: boolean;
  /** Longest full key (prefix included) the backend accepts, in characters. */
  readonly maxKeyLength: number;
  /** Smallest ttl (ms) that works on this backend (Redlock: leaves validity after drift). Checked at start-up against defaults.ttl, and per call. */
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

export interface BackendAcquireRequest extends BackendLock {
  /**
   * ms the caller may wait: 0 = try exactly once. The backend waits (watch, pub/sub, NOTIFY or
   * polling) until granted or until `signal` aborts; the core aborts `signal` at the deadline or when
   * the caller cancels (reason: WAIT_DEADLINE from core/acquire-loop at the deadline, the caller's
   * own reason on a cancel). After `signal` aborts the backend must clean up any queue entry it created and
   * resolve `{ acquired: false }` promptly.
   */
  readonly wait: number;
  readonly signal: AbortSignal;
  /**
   * Session-based backends call this when they learn that a granted lock is gone (session expired,
   * lease revoked, node deleted). Safe to call more than once; ignored before the grant or after release.
   */
  readonly onLost: (reason: string, cause?: unknown) => void;
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
       * TTL backends (safe: never later than the grant), the moment of the answer for session-based ones.
       */
      readonly sentAt?: number;
    }
  | {
      readonly acquired: false;
      /** ms until the lock is expected to be free, when known (drives Retry-After). */
      readonly retryAfter?: number;
    };

/**
 * A lock backend. Every method that talks to the system must reject with
 * LockBackendUnavailableError (or any error; the core wraps it) when the system cannot be reached;
 * the core bounds every call by the caller's budget, so a backend need not add its own timeouts.
 */
export interface LockBackend {
  /** Short name used in errors and logs ('memory', 'redis', ...). */
  readonly name: string;
  readonly capabilities: LockBackendCapabilities;

  /** Take the lock, waiting as `request.wait`/`request.signal` allow. */
  acquire(request: BackendAcquireRequest): Promise<BackendAcquireResult>;

  /**
   * Renew many held locks at once (the watchdog batches every due lock of this backend into one
   * call). Resolves one boolean per lock, in order: true = still ours and extended by its ttl,
   * false = gone or owned by someone else. Rejects when the backend cannot be reached.
   */
  renew(locks: readonly BackendLock[]): Promise<boolean[]>;

  /** Owner-checked release; releasing a lock that is not ours (or gone) is a no-op. */
  release(lock: BackendLock): Promise<void>;

  /** Stop the backend's own timers, subscriptions and sessions. Never closes the user's client. */
  close(): Promise<void>;
}
