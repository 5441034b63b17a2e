import type { LockBackend } from '../interfaces/lock-backend.interface';
import type { LockOptions } from '../interfaces/lock-options.interface';
import { DEFAULT_BACKEND_NAME } from '../distributed-lock.constants';
import type { LockActivity } from './lock-activity';
import { KEY_TEMPLATE, type LockEventBus, type LockSpanInfo } from './lock-events';
import type { LockHandle } from './lock-handle';
import type { ResolvedDefaults } from './lock-options';

export type AcquireOutcome = {
  handle?: LockHandle;
  error?: unknown;
  outcome: 'acquired' | 'reentered' | 'busy' | 'timeout';
};
type AcquireStats = { attempts: number; ahead: number };

/** What the observed acquire needs from the engine. */
export interface ObservedEngine {
  readonly events: LockEventBus;
  readonly activity: LockActivity;
  readonly defaults: ResolvedDefaults;
  readonly backends: ReadonlyMap<string, LockBackend>;
}

/** For a failure already emitted as an event (releaseFailed): the caller need not see it again. */
export function reported(): void {}

export function templateOf(options: LockOptions | undefined): string | undefined {
  return (options as { [KEY_TEMPLATE]?: string } | undefined)?.[KEY_TEMPLATE];
}

/**
 * true when nobody observes acquires (no event listener, no live tracer): observeAcquire would
 * then run the acquire as it is, so the engine may take it without the outcome object.
 */
export function unobserved(engine: ObservedEngine): boolean {
  return !engine.events.active && !engine.events.tracing;
}

/**
 * Runs one engine acquire (`run`) with lifecycle events (acquired, busy, acquireFailed) and the
 * tracers' 'acquire' span around it. With nobody listening it is `run()` itself: no event
 * object, no extra async layer. Observation never changes the outcome: it only reads it.
 */
export function observeAcquire(
  engine: ObservedEngine,
  key: string,
  options: LockOptions | undefined,
  run: (stats?: AcquireStats) => Promise<{ handle?: LockHandle; error?: unknown }>,
): Promise<AcquireOutcome> {
  const backend = (options?.backend as string | undefined) ?? DEFAULT_BACKEND_NAME;
  if (!engine.events.hot && !engine.events.tracing) {
    // Nobody wants per-acquire events: no event objects, no extra async layer; failures only.
    if (!engine.events.active) return run() as Promise<AcquireOutcome>;
    const startedAt = performance.now();
    return run().catch((error) => {
      engine.activity.acquireFailed(
        key,
        templateOf(options),
        options?.mode ?? engine.defaults.mode,
        backend,
        error,
        performance.now() - startedAt,
      );
      throw error;
    }) as Promise<AcquireOutcome>;
  }
  if (!engine.events.tracing) return counted(engine, key, options, backend, run);
  const info: LockSpanInfo = {
    kind: 'acquire',
    key,
    keyTemplate: templateOf(options),
    backend,
    backendKind: engine.backends.get(backend)?.name ?? backend,
    mode: options?.mode ?? engine.defaults.mode,
  };
  return engine.events.wrap(
    info,
    () => counted(engine, key, options, backend, run),
    (r) => r.outcome,
  );
}

async function counted(
  engine: ObservedEngine,
  key: string,
  options: LockOptions | undefined,
  backend: string,
  run: (stats?: AcquireStats) => Promise<{ handle?: LockHandle; error?: unknown }>,
): Promise<AcquireOutcome> {
  const stats = { attempts: 0, ahead: 0 };
  const startedAt = performance.now();
  const mode = options?.mode ?? engine.defaults.mode;
  try {
    const result = (await run(stats)) as AcquireOutcome;
    const wait = options?.wait ?? engine.defaults.wait;
    result.outcome = result.handle
      ? stats.attempts === 0
        ? 'reentered'
        : 'acquired'
      : wait === 0
        ? 'busy'
        : 'timeout';
    if (engine.events.hot)
      engine.activity.acquired(
        key,
        templateOf(options),
        mode,
        backend,
        result,
        stats,
        performance.now() - startedAt,
      );
    return result;
  } catch (error) {
    if (engine.events.active)
      engine.activity.acquireFailed(
        key,
        templateOf(options),
        mode,
        backend,
        error,
        performance.now() - startedAt,
      );
    throw error;
  }
}

/** Runs a locked call inside the tracers (a 'held' span, active for the work inside); plain otherwise. */
export function runHeld<T>(
  engine: ObservedEngine,
  handle: LockHandle,
  backend: string | undefined,
  fn: () => T | Promise<T>,
  keyTemplate?: string,
): Promise<T> {
  if (!engine.events.tracing) {
    // No tracer: run fn now (no extra promise and microtask per locked call), but never on a lost
    // lock: that throws here, synchronously, into the caller's try.
    handle.throwIfLost();
    try {
      return Promise.resolve(fn());
    } catch (error) {
      return Promise.reject(error);
    }
  }
  const name = backend ?? DEFAULT_BACKEND_NAME;
  const info: LockSpanInfo = {
    kind: 'held',
    key: handle.key,
    keyTemplate,
    backend: name,
    backendKind: engine.backends.get(name)?.name ?? name,
    mode: handle.mode,
  };
  return engine.events.wrap(
    info,
    () => Promise.resolve().then(fn),
    () => 'ok',
  );
}
