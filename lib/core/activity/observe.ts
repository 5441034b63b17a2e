/**
 * The pipeline's one observation hook: lifecycle events (acquired, busy, acquireFailed) and the
 * tracers' 'acquire' span around every acquire, and the 'held' span around a locked call.
 * Observation only reads an outcome, never changes it; with nobody listening or tracing it is the
 * call itself.
 */
import { DEFAULT_BACKEND_NAME } from '../../distributed-lock.constants';
import { LockAcquireTimeoutError } from '../../errors/lock-acquire-timeout.error';
import type { LockBackend, LockMode } from '../../interfaces/lock-backend.interface';
import type { AcquireCall, AcquireRecord } from '../acquire/pipeline-context';
import type { LockHandle } from '../lease/lock-handle';
import type { ResolvedDefaults } from '../keys/lock-options';
import type { LockActivity } from './lock-activity';
import type { LockEventBus, LockSpanInfo } from './lock-events';

/** What observation reads of the engine. */
export interface ObservedEngine {
  readonly events: LockEventBus;
  readonly activity: LockActivity;
  readonly defaults: ResolvedDefaults;
  readonly backends: ReadonlyMap<string, LockBackend>;
}

/** For a failure already emitted as an event (releaseFailed): the caller need not see it again. */
export function reported(): void {}

type Outcome = 'acquired' | 'reentered' | 'busy' | 'timeout' | 'failed';

function outcomeOf(record: AcquireRecord, error: unknown, wait: number): Outcome {
  if (error === undefined) return record.attempts === 0 ? 'reentered' : 'acquired';
  if (!(error instanceof LockAcquireTimeoutError)) return 'failed';
  return wait === 0 ? 'busy' : 'timeout';
}

/** What observation runs: the pipeline's start of one call, counting into `record`. */
export interface ObservedRun {
  start(call: AcquireCall, record: AcquireRecord): Promise<LockHandle>;
}

/**
 * The record of acquires nobody observes: shared, written and never read, so an unobserved acquire
 * allocates none.
 */
const UNREAD: AcquireRecord = { attempts: 0, ahead: 0 };

/** Runs one acquire (`pipeline.start`) under observation; see the file's header. */
export function observed(
  engine: ObservedEngine,
  call: AcquireCall,
  pipeline: ObservedRun,
): Promise<LockHandle> {
  const { events } = engine;
  const tracing = events.tracing;
  // Grants and busy answers are reported only to someone who wants them (the default log level
  // wants failures alone): then no record is kept and nothing runs on a grant.
  const outcomes = tracing || events.wants('acquired') || events.wants('busy');
  if (!outcomes) {
    if (!events.wants('acquireFailed')) return pipeline.start(call, UNREAD);
    const started = performance.now();
    return pipeline.start(call, UNREAD).catch((error: unknown) => {
      throw failedOnly(engine, call, started, error);
    });
  }
  const backend = call.options?.backend ?? DEFAULT_BACKEND_NAME;
  const record: AcquireRecord = outcomes
    ? { attempts: 0, ahead: engine.activity.waitingFor(backend, call.key) }
    : UNREAD;
  const mode: LockMode = call.options?.mode ?? engine.defaults.mode;
  const wait = call.options?.wait ?? engine.defaults.wait;
  const startedAt = performance.now();
  const report = (handle: LockHandle | undefined, error?: unknown): void => {
    if (!events.active) return;
    const waitMs = performance.now() - startedAt;
    const outcome = outcomeOf(record, error, wait);
    const base = { key: call.key, keyTemplate: call.keyTemplate, backend, waitMs };
    if (outcome === 'failed') engine.activity.acquireFailed({ ...base, mode, error });
    else if (outcomes)
      engine.activity.acquired({ ...base, requested: mode, handle, error, record, outcome });
  };
  const failed = (error: unknown): never => {
    report(undefined, error);
    throw error;
  };
  const observe = () =>
    pipeline.start(call, record).then((handle) => (report(handle), handle), failed);
  if (!tracing) return observe();
  const info: LockSpanInfo = {
    kind: 'acquire',
    key: call.key,
    keyTemplate: call.keyTemplate,
    backend,
    backendKind: engine.backends.get(backend)?.name ?? backend,
    mode,
  };
  // A busy answer is an outcome of the span ('busy', 'timeout'), not its failure.
  const settled = () =>
    observe().then(
      (handle): Settled => ({ handle }),
      (error: unknown): Settled => {
        if (error instanceof LockAcquireTimeoutError) return { error };
        throw error;
      },
    );
  return events
    .wrap(info, settled, (r) => outcomeOf(record, r.error, wait))
    .then((r) => r.handle ?? Promise.reject(r.error));
}

type Settled = { handle?: LockHandle; error?: unknown };

/**
 * What the default log level watches (failures alone), reported from one callback: an acquire that
 * failed (not a busy answer or a timeout) becomes an 'acquireFailed' event. Returns the error.
 */
function failedOnly(
  engine: ObservedEngine,
  call: AcquireCall,
  startedAt: number,
  error: unknown,
): unknown {
  if (!engine.events.active || outcomeOf(UNREAD, error, 0) !== 'failed') return error;
  engine.activity.acquireFailed({
    key: call.key,
    keyTemplate: call.keyTemplate,
    backend: call.options?.backend ?? DEFAULT_BACKEND_NAME,
    waitMs: performance.now() - startedAt,
    mode: call.options?.mode ?? engine.defaults.mode,
    error,
  });
  return error;
}

/**
 * Runs a locked call inside the tracers (a 'held' span, active for the work inside); plain
 * otherwise.
 */
export function runHeld<T>(
  engine: ObservedEngine,
  handle: LockHandle,
  backend: string | undefined,
  fn: () => T | Promise<T>,
  keyTemplate?: string,
): Promise<T> {
  if (!engine.events.tracing) {
    // Never on a lost lock: that throws here, synchronously, into the caller's try.
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
