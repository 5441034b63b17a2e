import { keyShape, type LockEvent, type LockSpanInfo } from '../core/lock-events';
import type { LockEngine } from '../core/lock-engine';

/** The slice of @opentelemetry/api this module uses (structural: the package stays an optional peer). */
export interface OtelApiLike {
  trace: {
    getTracer(name: string, version?: string): OtelTracer;
    setSpan(context: unknown, span: OtelSpan): unknown;
    /** The global provider: the API's ProxyTracerProvider, whose delegate is the registered SDK's. */
    getTracerProvider?(): { getDelegate?(): unknown };
  };
  context: { active(): unknown; with<T>(context: unknown, fn: () => T): T };
  metrics: { getMeter(name: string, version?: string): OtelMeter };
  SpanStatusCode: { ERROR: number };
  ProxyTracerProvider?: new () => { getDelegate?(): unknown };
  /** The API's no-op meter (what getMeter returns while no MeterProvider is registered). */
  createNoopMeter?(): unknown;
}
interface OtelSpan {
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: Error | string): void;
  end(): void;
  isRecording(): boolean;
}
interface OtelTracer {
  startSpan(name: string, options?: { attributes?: Attributes }): OtelSpan;
}
type Attributes = Record<string, string | number | boolean>;
interface OtelInstrument {
  record?(value: number, attributes?: Attributes): void;
  add?(value: number, attributes?: Attributes): void;
}
interface OtelObservable {
  addCallback(
    cb: (result: { observe(value: number, attributes?: Attributes): void }) => void,
  ): void;
  removeCallback(
    cb: (result: { observe(value: number, attributes?: Attributes): void }) => void,
  ): void;
}
interface OtelMeter {
  createHistogram(name: string, options?: { unit?: string; description?: string }): OtelInstrument;
  createCounter(name: string, options?: { unit?: string; description?: string }): OtelInstrument;
  createObservableGauge(
    name: string,
    options?: { unit?: string; description?: string },
  ): OtelObservable;
}

export interface LockTelemetryOptions {
  /**
   * What the `lock.key` attribute holds: 'template' (default: the @Locked template, or the raw key's
   * shape with numeric/long segments as '*', e.g. 'order:*'), 'key' (the raw key: high cardinality),
   * or a function of (key, template).
   */
  keyAttribute?: 'template' | 'key' | ((key: string, template: string | undefined) => string);
}

/** Instrument names, as exported (Prometheus shows dots as underscores, plus a unit suffix). */
export const LOCK_METRICS = {
  waitDuration: 'lock.wait.duration',
  holdDuration: 'lock.hold.duration',
  acquisitions: 'lock.acquisitions',
  losses: 'lock.losses',
  renewFailures: 'lock.renew.failures',
  held: 'lock.held',
  waiters: 'lock.waiters',
  fencingStale: 'lock.fencing.stale',
} as const;

export const LOCK_SPANS = { acquire: 'lock.acquire', held: 'lock.held' } as const;

const SCOPE = 'nestjs-distributed-lock';

/** @opentelemetry/api when it is installed, else undefined (then telemetry is a no-op). */
export function loadOpenTelemetry(): OtelApiLike | undefined {
  try {
    // Optional peer, loaded once at module init; never a hard dependency.
    return require('@opentelemetry/api') as OtelApiLike;
  } catch {
    return undefined;
  }
}

/**
 * OpenTelemetry for one engine: a span around every acquire ('lock.acquire') and every locked call
 * ('lock.held', the active span of the work inside, so its own spans nest under it), and metrics
 * from the lock events. Uses the global tracer and meter providers: with the API installed and no
 * SDK registered they are no-ops. Attributes: lock.key (a template by default, never the raw key
 * unless asked), lock.backend, lock.backend.kind, lock.mode, lock.outcome.
 */
export function instrumentEngine(
  engine: LockEngine,
  api: OtelApiLike,
  options: LockTelemetryOptions = {},
): () => void {
  const keyOf = keyAttribute(options.keyAttribute ?? 'template');
  const tracer = api.trace.getTracer(SCOPE);
  const meter = api.metrics.getMeter(SCOPE);
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
  const held = meter.createObservableGauge(LOCK_METRICS.held, {
    description: 'Locks held by this process',
  });
  const waiters = meter.createObservableGauge(LOCK_METRICS.waiters, {
    description: 'Acquire calls in flight in this process',
  });

  const observeHeld = (result: { observe(value: number, attributes?: Attributes): void }) => {
    const counts = new Map<string, number>([...engine.backends.keys()].map((n) => [n, 0]));
    for (const lock of engine.operator.heldLocks())
      counts.set(lock.backend, (counts.get(lock.backend) ?? 0) + 1);
    for (const [backend, n] of counts) result.observe(n, { 'lock.backend': backend });
  };
  const observeWaiters = (result: { observe(value: number, attributes?: Attributes): void }) => {
    for (const backend of engine.backends.keys())
      result.observe(engine.activity.waiting(backend), { 'lock.backend': backend });
  };
  held.addCallback(observeHeld);
  waiters.addCallback(observeWaiters);

  const stopTracing = engine.events.trace((info: LockSpanInfo, fn, outcome) => {
    const attributes: Attributes = {
      'lock.key': keyOf(info.key, info.keyTemplate),
      'lock.backend': info.backend,
      'lock.backend.kind': info.backendKind,
      'lock.mode': info.mode,
    };
    const span = tracer.startSpan(info.kind === 'acquire' ? LOCK_SPANS.acquire : LOCK_SPANS.held, {
      attributes,
    });
    // No SDK (or sampled out): no span to make active, so skip the context switch entirely.
    if (!span.isRecording()) {
      span.end();
      return fn();
    }
    return api.context.with(api.trace.setSpan(api.context.active(), span), () =>
      fn().then(
        (value) => {
          span.setAttribute('lock.outcome', outcome(value));
          span.end();
          return value;
        },
        (error: unknown) => {
          span.setAttribute(
            'lock.outcome',
            info.kind === 'acquire'
              ? 'error'
              : (error as { code?: string })?.code === 'LOCK_LOST'
                ? 'lost'
                : 'error',
          );
          span.recordException(error instanceof Error ? error : String(error));
          span.setStatus({
            code: api.SpanStatusCode.ERROR,
            message: error instanceof Error ? error.message : String(error),
          });
          span.end();
          throw error;
        },
      ),
    );
  }, tracerLive(api));

  // Metrics: the API has no proxy for meters, so instruments made from the no-op meter stay no-ops
  // even if an SDK registers later. With the no-op meter, listening would only build events (and
  // make every acquire and release emit them) for instruments that drop them.
  if (meter === api.createNoopMeter?.()) {
    return () => {
      stopTracing();
      held.removeCallback(observeHeld);
      waiters.removeCallback(observeWaiters);
    };
  }
  const stopListening = engine.events.on((e: LockEvent) => {
    switch (e.type) {
      case 'acquired': {
        const attrs = {
          'lock.key': keyOf(e.key, e.keyTemplate),
          'lock.backend': e.backend,
          'lock.mode': e.mode,
          'lock.outcome': e.reentrant ? 'reentered' : 'acquired',
        };
        acquisitions.add?.(1, attrs);
        if (!e.reentrant) wait.record?.(e.waitMs, attrs);
        break;
      }
      case 'busy': {
        const attrs = {
          'lock.key': keyOf(e.key, e.keyTemplate),
          'lock.backend': e.backend,
          'lock.mode': e.mode,
          'lock.outcome': e.timedOut ? 'timeout' : 'busy',
        };
        acquisitions.add?.(1, attrs);
        wait.record?.(e.waitMs, attrs);
        break;
      }
      case 'acquireFailed': {
        const attrs = {
          'lock.key': keyOf(e.key, e.keyTemplate),
          'lock.backend': e.backend,
          'lock.mode': e.mode,
          'lock.outcome': 'error',
        };
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
      default:
        break;
    }
  });

  return () => {
    stopTracing();
    stopListening();
    held.removeCallback(observeHeld);
    waiters.removeCallback(observeWaiters);
  };
}

/**
 * Whether the global tracer provider would record a span now. With @opentelemetry/api and no SDK
 * registered, the global ProxyTracerProvider delegates to the API's no-op provider, whose spans
 * never record: then the engine skips its span wrapping entirely (no span info, no no-op span, no
 * closures per acquire). Checked per acquire by identity with the no-op delegate seen at start-up,
 * so an SDK registered later (e.g. NodeSDK.start() after the module was built) is picked up at
 * once. The no-op delegate is what a fresh ProxyTracerProvider without delegate answers (the API's
 * singleton); no probe span is made. Unknown providers: always live.
 */
function tracerLive(api: OtelApiLike): () => boolean {
  const provider = api.trace.getTracerProvider?.();
  if (typeof provider?.getDelegate !== 'function' || typeof api.ProxyTracerProvider !== 'function')
    return () => true;
  // A fresh proxy with no delegate answers the API's no-op provider (a singleton).
  const noop = new api.ProxyTracerProvider().getDelegate?.();
  if (noop === undefined) return () => true;
  return () => provider.getDelegate!() !== noop;
}

function keyAttribute(
  option: NonNullable<LockTelemetryOptions['keyAttribute']>,
): (key: string, template: string | undefined) => string {
  if (option === 'key') return (key) => key;
  if (typeof option === 'function') return option;
  // Shapes are few (that is their point): cache them, so an event costs a map lookup, not a regex.
  const shapes = new Map<string, string>();
  return (key, template) => {
    if (template !== undefined) return template;
    let shape = shapes.get(key);
    if (shape === undefined) {
      if (shapes.size >= 10_000) shapes.clear();
      shapes.set(key, (shape = keyShape(key)));
    }
    return shape;
  };
}
