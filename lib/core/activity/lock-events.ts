import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { LockMode } from '../../interfaces/lock-backend.interface';

/** Fields every lock event carries. */
interface LockEventBase {
  /** Date.now() when the event happened. */
  readonly at: number;
  /** The registered backend name ('default', ...). */
  readonly backend: string;
}

/** A lock was granted (or re-entered: no backend round trip). */
export interface LockAcquiredEvent extends LockEventBase {
  readonly type: 'acquired';
  readonly key: string;
  /** The @Locked key template, when the call came from @Locked. */
  readonly keyTemplate?: string;
  readonly mode: LockMode;
  readonly fencingToken: bigint;
  /** ms from the acquire call to the grant. */
  readonly waitMs: number;
  /** Backend attempts made (0 for a re-entry). */
  readonly attempts: number;
  /**
   * The first attempt did not grant it, or another acquire of this process was ahead for the key.
   */
  readonly contended: boolean;
  readonly reentrant: boolean;
}

/** The lock stayed busy: `timedOut` when the caller waited (wait > 0), else one try (wait: 0). */
export interface LockBusyEvent extends LockEventBase {
  readonly type: 'busy';
  readonly key: string;
  readonly keyTemplate?: string;
  readonly mode: LockMode;
  readonly waitMs: number;
  readonly attempts: number;
  readonly timedOut: boolean;
  /** ms until the holder's grant would expire, when the backend said. */
  readonly retryAfter?: number;
}

/** A @Locked method with onBusy: 'skip' did not run because its lock was busy. */
export interface LockSkippedEvent extends LockEventBase {
  readonly type: 'skipped';
  readonly key: string;
  readonly keyTemplate?: string;
  /** The method, as 'Class.method()'. */
  readonly where: string;
}

/** An acquire failed with an error (backend unreachable, cancelled, ...), not with busy. */
export interface LockAcquireFailedEvent extends LockEventBase {
  readonly type: 'acquireFailed';
  readonly key: string;
  readonly keyTemplate?: string;
  readonly mode: LockMode;
  readonly waitMs: number;
  readonly error: unknown;
}

/** The last hold of a lock was released (the backend release is on its way). */
export interface LockReleasedEvent extends LockEventBase {
  readonly type: 'released';
  readonly key: string;
  readonly keyTemplate?: string;
  readonly mode: LockMode;
  readonly heldMs: number;
}

/** A held lock was lost: its handle's signal aborted with LockLostError. */
export interface LockLostEvent extends LockEventBase {
  readonly type: 'lost';
  readonly key: string;
  readonly keyTemplate?: string;
  readonly mode: LockMode;
  readonly reason: string;
  readonly heldMs: number;
  readonly error: unknown;
}

/**
 * A renewal call failed (backend slow or unreachable); the leases are retried until their validity
 * ends.
 */
export interface LockRenewFailedEvent extends LockEventBase {
  readonly type: 'renewFailed';
  readonly keys: readonly string[];
  readonly error: unknown;
}

/**
 * A backend release failed. The engine retries it in the background until it answers or the
 * lease's ttl has passed (releaseRetried says how that ended).
 */
export interface LockReleaseFailedEvent extends LockEventBase {
  readonly type: 'releaseFailed';
  readonly key: string;
  /**
   * 'release', 'lost-release', 'late-grant' (a grant answered after the caller gave up),
   * 'cancelled', 'shutdown'.
   */
  readonly during: string;
  readonly error: unknown;
}

/**
 * A release that failed (releaseFailed, during 'release' or 'lost-release') was retried in the
 * background, and the retries ended: `released` (the backend answered: the key is freed, or was
 * already gone or someone else's), `expired` (the lease's ttl passed first: the server dropped it),
 * or `shutdown` (close() made the last attempt, and it failed too).
 */
export interface LockReleaseRetriedEvent extends LockEventBase {
  readonly type: 'releaseRetried';
  readonly key: string;
  readonly outcome: 'released' | 'expired' | 'shutdown';
  /** Retry attempts made (the first, failed release not counted). */
  readonly attempts: number;
  /** ms from the first failure to the end of the retries. */
  readonly retryMs: number;
}

/** A backend call failed or got no answer in time (emitted once per outage, or for 'close'). */
export interface LockBackendUnavailableEvent extends LockEventBase {
  readonly type: 'backendUnavailable';
  readonly operation: string;
  readonly error: unknown;
}

/** A backend answered again after backendUnavailable. */
export interface LockBackendRecoveredEvent extends LockEventBase {
  readonly type: 'backendRecovered';
  /** ms since the outage was first seen. */
  readonly downMs: number;
}

/** An operator freed a key whatever its owner (LockService.forceRelease). */
export interface LockForceReleasedEvent extends LockEventBase {
  readonly type: 'forceReleased';
  readonly key: string;
  /** true when something was held and is now freed. */
  readonly freed: boolean;
}

export type LockEvent =
  | LockAcquiredEvent
  | LockBusyEvent
  | LockSkippedEvent
  | LockAcquireFailedEvent
  | LockReleasedEvent
  | LockLostEvent
  | LockRenewFailedEvent
  | LockReleaseFailedEvent
  | LockReleaseRetriedEvent
  | LockBackendUnavailableEvent
  | LockBackendRecoveredEvent
  | LockForceReleasedEvent;

export type LockEventType = LockEvent['type'];

/** Every event type, in a stable order (the event-emitter bridge emits them as 'lock.<type>'). */
export const LOCK_EVENT_TYPES: readonly LockEventType[] = [
  'acquired',
  'busy',
  'skipped',
  'acquireFailed',
  'released',
  'lost',
  'renewFailed',
  'releaseFailed',
  'releaseRetried',
  'backendUnavailable',
  'backendRecovered',
  'forceReleased',
];

export type LockEventListener = (event: LockEvent) => void;

/** What a tracer sees of one acquire or one locked call. */
export interface LockSpanInfo {
  readonly kind: 'acquire' | 'held';
  readonly key: string;
  readonly keyTemplate?: string;
  readonly backend: string;
  /** The backend kind ('redis', ...). */
  readonly backendKind: string;
  readonly mode: LockMode;
}

/**
 * Wraps one acquire (`kind: 'acquire'`, resolving to the outcome 'acquired' | 'reentered' | 'busy'
 * | 'timeout') or one locked call (`kind: 'held'`) so a tracer can open a span around it and make
 * it the active context of the work inside.
 */
export type LockTracer = <T>(
  info: LockSpanInfo,
  fn: () => Promise<T>,
  outcome: (value: T) => string,
) => Promise<T>;

/**
 * The engine's one event channel: listeners get every LockEvent synchronously, tracers wrap
 * acquires and locked calls. Framework-free (the Nest layer subscribes a Logger, an
 * @nestjs/event-emitter bridge and OpenTelemetry to it). Why it cannot hurt a lock: a listener
 * that throws is reported as a process warning and never reaches the engine, and with no
 * listener or tracer the engine builds no event at all (`active`/`tracing` are checked first).
 */
export class LockEventBus {
  private listeners: { listener: LockEventListener; types?: ReadonlySet<LockEventType> }[] = [];
  private tracers: { tracer: LockTracer; enabled?: () => boolean }[] = [];
  /** Listeners per event type: an event nobody wants is never built. */
  private readonly wanted = new Map<LockEventType, number>();

  get active(): boolean {
    return this.listeners.length > 0;
  }

  /** true when some listener takes events of `type`. */
  wants(type: LockEventType): boolean {
    return (this.wanted.get(type) ?? 0) > 0;
  }

  /** Some tracer is live now (a tracer over OpenTelemetry without an SDK is not: see trace()). */
  get tracing(): boolean {
    for (const t of this.tracers) if (t.enabled === undefined || t.enabled()) return true;
    return false;
  }

  /** Subscribes to every event, or only to `types`; returns the unsubscribe function. */
  on(listener: LockEventListener, types?: readonly LockEventType[]): () => void {
    const entry = { listener, types: types ? new Set(types) : undefined };
    const counted = types ?? LOCK_EVENT_TYPES;
    const count = (by: number) => {
      for (const t of new Set(counted)) this.wanted.set(t, (this.wanted.get(t) ?? 0) + by);
    };
    this.listeners = [...this.listeners, entry];
    count(1);
    return () => {
      if (!this.listeners.includes(entry)) return;
      this.listeners = this.listeners.filter((l) => l !== entry);
      count(-1);
    };
  }

  /**
   * Adds a tracer (outermost first); returns its removal. `enabled` (cheap, asked on every acquire)
   * says whether it would record anything now: while no tracer is enabled, acquires take the plain
   * path (no span info, no wrapping), as if none were added.
   */
  trace(tracer: LockTracer, enabled?: () => boolean): () => void {
    const entry = { tracer, enabled };
    this.tracers = [...this.tracers, entry];
    return () => {
      this.tracers = this.tracers.filter((t) => t !== entry);
    };
  }

  emit(event: LockEvent): void {
    for (const { listener, types } of this.listeners) {
      if (types && !types.has(event.type)) continue;
      try {
        listener(event);
      } catch (error) {
        // A broken listener must not break locking; it is reported, not swallowed.
        process.emitWarning(
          `a lock event listener threw on '${event.type}': ${String(error)}`,
          'DistributedLockWarning',
        );
      }
    }
  }

  /** Runs fn inside every tracer (no-op pass-through without tracers). */
  wrap<T>(info: LockSpanInfo, fn: () => Promise<T>, outcome: (value: T) => string): Promise<T> {
    const tracers = this.tracers;
    let run = fn;
    for (let i = tracers.length - 1; i >= 0; i--) {
      const { tracer, enabled } = tracers[i];
      if (enabled !== undefined && !enabled()) continue;
      const inner = run;
      run = () => tracer(info, inner, outcome);
    }
    return run();
  }
}

/** Segments a shape shows at most (a longer key ends in '…'). */
const SHAPE_SEGMENTS = 8;
/** A first segment kept as it is: a short word, as code names a kind of lock. */
const SHAPE_HEAD = /^[A-Za-z_-]{1,32}$/;

/**
 * The default low-cardinality form of a raw key for metrics and spans: the first ':'-separated
 * segment is kept when it is a short word (letters, '_', '-') followed by another segment, else
 * '*'; every later segment becomes '*', whatever it holds (a slug is a request value as much as
 * an id is), and at most SHAPE_SEGMENTS are shown ('order:42' -> 'order:*',
 * 'tenant:acme:invoice:abcdef' -> 'tenant:*:*:*'). A key of one segment is '*': with nothing
 * after it the word may be the value itself (a user name, a slug), and 1,000 of them must not
 * give 1,000 shapes.
 */
export function keyShape(key: string): string {
  const parts = key.split(':');
  let shape = parts.length > 1 && SHAPE_HEAD.test(parts[0]) ? parts[0] : '*';
  const shown = Math.min(parts.length, SHAPE_SEGMENTS);
  for (let i = 1; i < shown; i++) shape += ':*';
  return parts.length > SHAPE_SEGMENTS ? `${shape}:…` : shape;
}

/** Validates the engine's `onEvent` option. */
export function checkListener(listener: unknown): LockEventListener {
  if (typeof listener !== 'function')
    throw new InvalidLockOptionsError('onEvent', listener, 'a function (event) => void');
  return listener as LockEventListener;
}
