import { AsyncLocalStorage } from 'node:async_hooks';
import { RequestAbortedError } from '../errors/request-aborted.error';

interface Emitter {
  once(event: string, listener: () => void): unknown;
  off?(event: string, listener: () => void): unknown;
  removeListener?(event: string, listener: () => void): unknown;
}

/**
 * Where a request learns that its client is gone: an emitter, the event, and whether it already is.
 */
export interface GoneSource {
  emitter: Emitter;
  event: string;
  /** The client is gone already (checked whenever a lock wait asks for the signal). */
  gone(): boolean;
  /** On the event: whether it means the client left (an HTTP response also closes when done). */
  early?(): boolean;
}

/** A request's signal combined with a caller's own (see RequestContext.combine). */
export type RequestSignal = (own: AbortSignal | undefined) => AbortSignal | undefined;

/**
 * The request being handled in this async context. Attaching one costs a small object: its
 * AbortSignal is made only when a lock call asks for it, and the client's 'close' listener is added
 * only while somebody listens to that signal (the engine listens only once an acquire has to wait),
 * so a request that takes no lock, or takes a free one, never touches its connection's listeners.
 */
export class RequestContext {
  private controller?: AbortController;
  private source?: GoneSource | null;

  private bound?: RequestSignal;

  constructor(private readonly find: () => GoneSource | undefined) {}

  /** `combine`, bound to this request (made on first use). */
  get withSignal(): RequestSignal {
    return (this.bound ??= (own) => this.combine(own));
  }

  /** The caller's signal and the request's, combined (either aborts the wait). */
  combine(own: AbortSignal | undefined): AbortSignal | undefined {
    const request = this.signal();
    if (!request || request === own) return own;
    if (!own) return request;
    // AbortSignal.any listens to its sources internally, not through addEventListener: listen now
    // (the listener goes with the signal's abort, or stays until the response closes).
    request.addEventListener('abort', noop, { once: true });
    return AbortSignal.any([own, request]);
  }

  /** The signal lock waits run under; undefined when the transport gives no way to tell. */
  signal(): AbortSignal | undefined {
    if (this.source === undefined) this.source = this.find() ?? null;
    const source = this.source;
    if (!source) return undefined;
    const controller = (this.controller ??= lazilyWatched(source));
    if (!controller.signal.aborted && source.gone()) controller.abort(new RequestAbortedError());
    return controller.signal;
  }
}

/**
 * An AbortController whose signal starts listening to `source` when its first 'abort' listener is
 * added and stops when the last one is removed (or the signal aborts).
 */
function lazilyWatched(source: GoneSource): AbortController {
  const controller = new AbortController();
  const signal = controller.signal;
  let listeners = 0;
  const off = () =>
    (source.emitter.off ?? source.emitter.removeListener)?.call(
      source.emitter,
      source.event,
      onGone,
    );
  function onGone(): void {
    listeners = 0;
    if (source.early?.() ?? true) controller.abort(new RequestAbortedError());
  }
  const add = signal.addEventListener;
  const remove = signal.removeEventListener;
  Object.defineProperties(signal, {
    addEventListener: {
      value(this: AbortSignal, ...args: Parameters<AbortSignal['addEventListener']>) {
        const result = add.apply(this, args);
        // The client may have left while nobody listened (during the first attempt): look now.
        if (args[0] === 'abort' && !signal.aborted && listeners++ === 0) {
          if (source.gone()) controller.abort(new RequestAbortedError());
          else source.emitter.once(source.event, onGone);
        }
        return result;
      },
    },
    removeEventListener: {
      value(this: AbortSignal, ...args: Parameters<AbortSignal['removeEventListener']>) {
        if (args[0] === 'abort' && listeners > 0 && --listeners === 0) off();
        return remove.apply(this, args);
      },
    },
  });
  return controller;
}

/**
 * The request of this async context. The module's middleware attaches it to every HTTP request
 * (Express and Fastify, GraphQL over HTTP included); RequestLifecycleInterceptor to gateway and
 * microservice handlers. @Locked and LockService read it, so a dead request stops waiting and
 * leaves the queue.
 */
const storage = new AsyncLocalStorage<RequestContext>();

export function runInRequest<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** The signal of the request of this async context (made now), or undefined outside one. */
export function currentRequestSignal(): AbortSignal | undefined {
  return storage.getStore()?.signal();
}

/**
 * For a lock call made in this async context: how its wait learns that the client left (the
 * request's signal combined with the caller's own), or undefined outside a request. Nothing is
 * made until the acquire has to wait and calls it.
 */
export function requestSignalOf(): RequestSignal | undefined {
  return storage.getStore()?.withSignal;
}

function noop(): void {}

export function isEmitter(value: unknown): value is Emitter {
  return !!value && typeof (value as Emitter).once === 'function';
}
