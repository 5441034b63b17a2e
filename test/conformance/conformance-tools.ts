import type {
  BackendAcquireResult,
  BackendAttempt,
  BackendLock,
  LockBackend,
  LockMode,
} from '../../lib/backend-kit';

/**
 * Wraps a real backend to count calls and to simulate the death of its process: once `crashed`,
 * renewals fail (nobody is there to send them) and releases never happen, so the lock must expire
 * on the server by itself. The inner backend's client stays real.
 */
export class CrashableBackend implements LockBackend {
  crashed = false;
  /** Calls into the backend that may grant a lock (tryAcquire attempts). */
  acquireCalls = 0;
  readonly acquireStarted: Promise<void>;
  private started!: () => void;
  /** Present exactly when the inner backend queues its waiters itself, so the engine treats both alike. */
  readonly leave?: (request: BackendAttempt) => Promise<void>;

  constructor(readonly inner: LockBackend) {
    this.acquireStarted = new Promise((r) => (this.started = r));
    this.leave = inner.leave?.bind(inner);
  }

  get wakeups() {
    return this.inner.wakeups;
  }

  get waitPolicy() {
    return this.inner.waitPolicy;
  }

  get name() {
    return this.inner.name;
  }

  get capabilities() {
    return this.inner.capabilities;
  }

  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    this.acquireCalls++;
    const result = this.inner.tryAcquire(request);
    this.started();
    return result;
  }

  renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    if (this.crashed) return Promise.reject(new Error('process is dead'));
    return this.inner.renew(locks);
  }

  async release(lock: BackendLock): Promise<void> {
    if (!this.crashed) await this.inner.release(lock);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Resolves with the signal's reason once it aborts; rejects if it has not after `ms`. */
export function untilAborted(signal: AbortSignal, ms: number): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`signal not aborted after ${ms} ms`)), ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve(signal.reason);
      },
      { once: true },
    );
  });
}

/**
 * A deliberately non-atomic counter (read -> yield -> write) plus an overlap detector: any overlap
 * of two holders shows up as maxConcurrent > 1 and, very likely, as lost updates.
 */
export class MutexProbe {
  counter = 0;
  maxConcurrent = 0;
  writerOverlaps = 0;
  private active = 0;
  private writers = 0;
  private readers = 0;

  async criticalSection(): Promise<void> {
    this.active++;
    this.maxConcurrent = Math.max(this.maxConcurrent, this.active);
    const read = this.counter;
    await new Promise((r) => setTimeout(r, Math.random() * 3));
    await new Promise((r) => setImmediate(r));
    this.counter = read + 1;
    this.active--;
  }

  async section(mode: LockMode): Promise<void> {
    if (mode === 'shared') {
      this.readers++;
      if (this.writers > 0) this.writerOverlaps++;
      await new Promise((r) => setTimeout(r, Math.random() * 3));
      if (this.writers > 0) this.writerOverlaps++;
      this.readers--;
      return;
    }
    this.writers++;
    if (this.writers > 1 || this.readers > 0) this.writerOverlaps++;
    const read = this.counter;
    await new Promise((r) => setTimeout(r, Math.random() * 3));
    if (this.writers > 1 || this.readers > 0) this.writerOverlaps++;
    this.counter = read + 1;
    this.writers--;
  }
}
