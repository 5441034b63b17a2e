import { keyShape, type LockTracer } from '../core/activity/lock-events';
import type { LockEngine } from '../core/lock-engine';
import {
  createLockInstruments,
  observeLockGauges,
  recordLockEvents,
  type Attributes,
  type KeyAttributeOf,
  type OtelMeter,
} from './lock-metrics';

/**
 * The slice of @opentelemetry/api this module uses (structural: the package stays an optional
 * peer).
 */
export interface OtelApiLike {
  trace: {
    getTracer(name: string, version?: string): OtelTracer;
    setSpan(context: unknown, span: OtelSpan): unknown;
    /**
     * The global provider: the API's ProxyTracerProvider, whose delegate is the registered SDK's.
     */
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

export interface LockTelemetryOptions {
  /**
   * What the `lock.key` attribute holds: 'template' (default: the @Locked template, or the raw
   * key's shape with numeric/long segments as '*', e.g. 'order:*'), 'key' (the raw key: high
   * cardinality), or a function of (key, template).
   */
  keyAttribute?: 'template' | 'key' | ((key: string, template: string | undefined) => string);
}

export { LOCK_METRICS } from './lock-metrics';

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
  const instruments = createLockInstruments(meter);
  const stopObserving = observeLockGauges(engine, instruments);
  const stopTracing = engine.events.trace(spanTracer(api, tracer, keyOf), tracerLive(api));

  // Metrics: the API has no proxy for meters, so instruments made from the no-op meter stay no-ops
  // even if an SDK registers later. With the no-op meter, listening would only build events (and
  // make every acquire and release emit them) for instruments that drop them.
  if (meter === api.createNoopMeter?.()) {
    return () => {
      stopTracing();
      stopObserving();
    };
  }
  const stopListening = recordLockEvents(engine, instruments, keyOf);

  return () => {
    stopTracing();
    stopListening();
    stopObserving();
  };
}

/**
 * The engine's tracer: a span per acquire or locked call, made the active context of the work
 * inside, ended with its outcome (and, on a throw, the error).
 */
function spanTracer(api: OtelApiLike, tracer: OtelTracer, keyOf: KeyAttributeOf): LockTracer {
  return (info, fn, outcome) => {
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

/** Distinct `lock.key` shapes of raw keys one engine reports at most (see keyAttribute). */
const MAX_SHAPES = 100;
const OTHER_SHAPE = '(other)';

/** How `lock.key` is computed for one engine (exported for tests). */
export function keyAttribute(
  option: NonNullable<LockTelemetryOptions['keyAttribute']>,
): KeyAttributeOf {
  if (option === 'key') return (key) => key;
  if (typeof option === 'function') return option;
  // Shapes are few (that is their point): cache them, so an event costs a map lookup, not a regex.
  const shapes = new Map<string, string>();
  // A hard bound whatever the keys: past MAX_SHAPES distinct shapes, new ones count as OTHER_SHAPE.
  const seen = new Set<string>();
  return (key, template) => {
    if (template !== undefined) return template;
    let shape = shapes.get(key);
    if (shape === undefined) {
      if (shapes.size >= 10_000) shapes.clear();
      shape = keyShape(key);
      if (!seen.has(shape)) {
        if (seen.size >= MAX_SHAPES) shape = OTHER_SHAPE;
        else seen.add(shape);
      }
      shapes.set(key, shape);
    }
    return shape;
  };
}
