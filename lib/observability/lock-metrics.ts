/**
 * The OpenTelemetry metrics of one engine (lock-telemetry.ts wires them up next to the spans): the
 * instruments named in LOCK_METRICS, the gauges read from the engine on collection, and the
 * counters and histograms fed from the lock events.
 */
import type { LockEvent } from '../core/activity/lock-events';
import type { LockEngine } from '../core/lock-engine';

export type Attributes = Record<string, string | number | boolean>;
export interface OtelInstrument {
  record?(value: number, attributes?: Attributes): void;
  add?(value: number, attributes?: Attributes): void;
}
type ObserveResult = { observe(value: number, attributes?: Attributes): void };
export interface OtelObservable {
  addCallback(cb: (result: ObserveResult) => void): void;
  removeCallback(cb: (result: ObserveResult) => void): void;
}
export interface OtelMeter {
  createHistogram(name: string, options?: { unit?: string; description?: string }): OtelInstrument;
  createCounter(name: string, options?: { unit?: string; description?: string }): OtelInstrument;
  createObservableGauge(
    name: string,
    options?: { unit?: string; description?: string },
  ): OtelObservable;
}

/** The `lock.key` attribute of a key (and its @Locked template): see LockTelemetryOptions. */
export type KeyAttributeOf = (key: string, template: string | undefined) => string;

/** Instrument names, as exported (Prometheus shows dots as underscores, plus a unit suffix). */
export const LOCK_METRICS = {
  waitDuration: 'lock.wait.duration',
  holdDuration: 'lock.hold.duration',
  acquisitions: 'lock.acquisitions',
  losses: 'lock.losses',
  renewFailures: 'lock.renew.failures',
  releaseRetries: 'lock.release.retries',
  held: 'lock.held',
  waiters: 'lock.waiters',
  fencingStale: 'lock.fencing.stale',
} as const;

/** The instruments of one engine, made from one meter. */
export interface LockInstruments {
  readonly wait: OtelInstrument;
  readonly hold: OtelInstrument;
  readonly acquisitions: OtelInstrument;
  readonly losses: OtelInstrument;
  readonly renewFailures: OtelInstrument;
  readonly releaseRetries: OtelInstrument;
  readonly held: OtelObservable;
  readonly waiters: OtelObservable;
}

/** Creates the instruments of LOCK_METRICS on `meter`. */
export function createLockInstruments(meter: OtelMeter): LockInstruments {
  const wait = meter.createHistogram(LOCK_METRICS.waitDuration, {
    unit: 'ms',
    description: 'Time from an acquire call to its grant or give-up',
  });
  const hold = meter.createHistogram(LOCK_METRICS.holdDuration, {
    unit: 'ms',
    description: 'Time a lock was held, until released or lost',
  });
  const acquisitions = meter.createCounter(LOCK_METRICS.acquisitions, {
    description: 'Acquire calls by outcome (acquired, reentered, busy, timeout, error, skipped)',
  });
  const losses = meter.createCounter(LOCK_METRICS.losses, {
    description: 'Held locks lost (expired, deleted, force-released, session ended)',
  });
  const renewFailures = meter.createCounter(LOCK_METRICS.renewFailures, {
    description: 'Locks whose renewal call failed (backend slow or unreachable)',
  });
  const releaseRetries = meter.createCounter(LOCK_METRICS.releaseRetries, {
    description:
      'Releases that failed and were retried in the background, by how the retries ended (released, expired, shutdown)',
  });
  const held = meter.createObservableGauge(LOCK_METRICS.held, {
    description: 'Locks held by this process',
  });
  const waiters = meter.createObservableGauge(LOCK_METRICS.waiters, {
    description: 'Acquire calls in flight in this process',
  });
  return { wait, hold, acquisitions, losses, renewFailures, releaseRetries, held, waiters };
}

/** Registers the gauges' callbacks (held locks and waiters per backend); returns their removal. */
export function observeLockGauges(engine: LockEngine, instruments: LockInstruments): () => void {
  const { held, waiters } = instruments;
  const observeHeld = (result: ObserveResult) => {
    const counts = new Map<string, number>([...engine.backends.keys()].map((n) => [n, 0]));
    for (const lock of engine.operator.heldLocks())
      counts.set(lock.backend, (counts.get(lock.backend) ?? 0) + 1);
    for (const [backend, n] of counts) result.observe(n, { 'lock.backend': backend });
  };
  const observeWaiters = (result: ObserveResult) => {
    for (const backend of engine.backends.keys())
      result.observe(engine.activity.waiting(backend), { 'lock.backend': backend });
  };
  held.addCallback(observeHeld);
  waiters.addCallback(observeWaiters);
  return () => {
    held.removeCallback(observeHeld);
    waiters.removeCallback(observeWaiters);
  };
}

/** Feeds the counters and histograms from the engine's lock events; returns the unsubscribe. */
export function recordLockEvents(
  engine: LockEngine,
  instruments: LockInstruments,
  keyOf: KeyAttributeOf,
): () => void {
  return engine.events.on((e: LockEvent) => recordLockEvent(e, instruments, keyOf));
}

/** Records one lock event on its instruments (events without a metric are ignored). */
function recordLockEvent(e: LockEvent, instruments: LockInstruments, keyOf: KeyAttributeOf): void {
  const { wait, hold, acquisitions, losses, renewFailures, releaseRetries } = instruments;
  switch (e.type) {
    case 'acquired': {
      const attrs = acquireAttributes(e, keyOf, e.reentrant ? 'reentered' : 'acquired');
      acquisitions.add?.(1, attrs);
      if (!e.reentrant) wait.record?.(e.waitMs, attrs);
      break;
    }
    case 'busy': {
      const attrs = acquireAttributes(e, keyOf, e.timedOut ? 'timeout' : 'busy');
      acquisitions.add?.(1, attrs);
      wait.record?.(e.waitMs, attrs);
      break;
    }
    case 'acquireFailed': {
      const attrs = acquireAttributes(e, keyOf, 'error');
      acquisitions.add?.(1, attrs);
      wait.record?.(e.waitMs, attrs);
      break;
    }
    case 'skipped':
      acquisitions.add?.(1, {
        'lock.key': keyOf(e.key, e.keyTemplate),
        'lock.backend': e.backend,
        'lock.outcome': 'skipped',
      });
      break;
    case 'released':
    case 'lost': {
      const attrs = {
        'lock.key': keyOf(e.key, e.keyTemplate),
        'lock.backend': e.backend,
        'lock.mode': e.mode,
        'lock.end': e.type,
      };
      hold.record?.(e.heldMs, attrs);
      if (e.type === 'lost')
        losses.add?.(1, { 'lock.key': attrs['lock.key'], 'lock.backend': e.backend });
      break;
    }
    case 'renewFailed':
      renewFailures.add?.(e.keys.length, { 'lock.backend': e.backend });
      break;
    case 'releaseRetried':
      releaseRetries.add?.(1, { 'lock.backend': e.backend, 'lock.outcome': e.outcome });
      break;
    default:
      break;
  }
}

/** The attributes of an acquire's metrics: key, backend, mode and `outcome`. */
function acquireAttributes(
  e: Extract<LockEvent, { type: 'acquired' | 'busy' | 'acquireFailed' }>,
  keyOf: KeyAttributeOf,
  outcome: string,
): Attributes {
  return {
    'lock.key': keyOf(e.key, e.keyTemplate),
    'lock.backend': e.backend,
    'lock.mode': e.mode,
    'lock.outcome': outcome,
  };
}
