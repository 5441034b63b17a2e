import type {
  BackendAcquireRequest,
  BackendAcquireResult,
  ReleaseListener,
} from '../../interfaces/lock-backend.interface';
import { asUnavailable } from '../../backend-kit/wait-loop';
import { SteadyMap } from '../../backend-kit/steady-collections';

/**
 * In-process FIFO line per key, run by the engine for every backend it waits for. Only the
 * waiter at the head of a key's line attempts and listens for wake-ups; the others sleep until it
 * leaves (granted, timed out or cancelled). Why: a release then wakes ONE waiter per process, not
 * every waiter (a herd is quadratic in waiters), 50 waiters of one process never queue 50
 * transactions on a small SQL pool ahead of the holder's renewals, and waiters of one process are
 * served in arrival order. Processes still compete through the backend. A waiter whose deadline
 * passes while queued behind a head whose attempts fail gets LockBackendUnavailableError (the
 * database is down), not a timeout.
 *
 * Handoff: when the head leaves WITH a grant, the lock is known busy, so the next head need not
 * attempt at once (that attempt could only answer busy). Given `listen`, the queue starts the next
 * head's release listener synchronously, before the grant even reaches its holder, so no release
 * can be missed; the next head then waits for it and attempts once. A handoff costs one attempt.
 */
export class LocalWaitQueue {
  private readonly lines = new SteadyMap<string, Entry[]>();
  /**
   * The last attempt's failure, cleared by any answer: queued waiters report it at their deadline.
   */
  private failure: unknown;

  constructor(private readonly backend: string) {}

  /**
   * Runs `poll` (the backend's pollAcquire for this request) when the request reaches the head of
   * its key's line; `poll` gets the handoff listener when the previous head left with a grant.
   * `listen` (the backend's wake-ups, when they need no preparation) enables handoffs. `onQueue`
   * is called when the request has to queue behind others of this process (its wait begins).
   *
   * A request that finds its key's line empty becomes its head synchronously, before any await:
   * no turn promise, no abort listener, and its first attempt starts at once. Arrivals after it,
   * even in the same tick, find the line non-empty and queue behind it, so arrival order holds
   * (an earlier "attempt before joining" shortcut broke exactly that: two attempts in flight,
   * answered out of order). The uncontended cycle costs no promise machinery of the line.
   */
  async run(
    request: BackendAcquireRequest,
    poll: (handoff?: ReleaseListener) => Promise<BackendAcquireResult>,
    listen?: (key: string) => ReleaseListener,
    onQueue?: () => void,
  ): Promise<BackendAcquireResult> {
    if (request.wait === 0) return poll();
    const key = request.key;
    const line = this.lines.get(key);
    let entry: Entry;
    // A head from the start reads no signal (nothing can have aborted it synchronously since the
    // engine checked the caller's); the engine makes the request's signal only when someone reads
    // it.
    const queued = line !== undefined;
    if (line === undefined) {
      entry = { wake: noop };
      this.lines.set(key, [entry]);
    } else {
      onQueue?.();
      entry = await this.queue(line, key, request.signal);
    }
    let result: BackendAcquireResult | undefined;
    try {
      if (queued && request.signal.aborted) {
        entry.handoff?.dispose();
        if (this.failure !== undefined) throw asUnavailable(this.failure, this.backend, key);
        return { acquired: false };
      }
      result = await poll(entry.handoff);
      return result;
    } finally {
      this.leave(key, entry, result?.acquired === true ? listen : undefined);
    }
  }

  /** Wraps one attempt so its outcome updates the backend's health. */
  async attempt<T>(attempt: () => Promise<T>): Promise<T> {
    try {
      const result = await attempt();
      this.failure = undefined;
      return result;
    } catch (error) {
      this.failure = error;
      throw error;
    }
  }

  /** Number of waiters queued (head included) across keys. */
  get waiting(): number {
    let n = 0;
    for (const line of this.lines.values()) n += line.length;
    return n;
  }

  /**
   * Queues behind `line`'s head; resolves once first in it, or when `signal` aborts (still queued).
   */
  private async queue(line: Entry[], key: string, signal: AbortSignal): Promise<Entry> {
    let wake!: () => void;
    const turn = new Promise<void>((resolve) => (wake = resolve));
    const entry: Entry = { wake };
    line.push(entry);
    if (!signal.aborted) {
      await new Promise<void>((resolve) => {
        const onAbort = () => resolve();
        signal.addEventListener('abort', onAbort, { once: true });
        void turn.then(() => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        });
      });
    }
    return entry;
  }

  /** Leaves `key`'s line; a head leaving wakes the next (handing it `handoff`'s listener). */
  private leave(key: string, entry: Entry, handoff?: (key: string) => ReleaseListener): void {
    const current = this.lines.get(key);
    const at = current ? current.indexOf(entry) : -1;
    if (!current || at < 0) return;
    current.splice(at, 1);
    if (current.length === 0) this.lines.delete(key);
    else if (at === 0) {
      // Synchronously, before our grant reaches its holder: the next head cannot miss its release.
      if (handoff) current[0].handoff = handoff(key);
      current[0].wake();
    }
  }
}

const noop = (): void => undefined;

interface Entry {
  readonly wake: () => void;
  /** Started by the previous head as it left with a grant: the release this waiter waits for. */
  handoff?: ReleaseListener;
}
