import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The signal of the HTTP request being handled in this async context: it aborts when the client
 * goes away before the response is done. RequestLifecycleInterceptor sets it; @Locked and
 * LockService pass it to their acquires, so a dead request stops waiting and leaves the queue.
 */
const storage = new AsyncLocalStorage<AbortSignal>();

export function runWithRequestSignal<T>(signal: AbortSignal, fn: () => T): T {
  return storage.run(signal, fn);
}

export function currentRequestSignal(): AbortSignal | undefined {
  return storage.getStore();
}

/** The caller's signal and the request's, combined (either aborts the wait). */
export function withRequestSignal(signal: AbortSignal | undefined): AbortSignal | undefined {
  const request = currentRequestSignal();
  if (!request || request === signal) return signal;
  return signal ? AbortSignal.any([signal, request]) : request;
}
