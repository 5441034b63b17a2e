import { LocalWaitQueue } from '../backend-kit/local-wait.queue';
import { pollAcquire } from '../backend-kit/wait-loop';
import type {
  BackendAcquireRequest,
  BackendAcquireResult,
  LockBackend,
} from '../interfaces/lock-backend.interface';

/**
 * The core owns waiting. For a backend that queues natively (etcd, ZooKeeper: `acquire`), a wait
 * goes to it; for every other backend the engine runs the wait itself over the backend's one-shot
 * `tryAcquire`: a FIFO line per key in this process (only its head attempts, so a release wakes
 * one waiter per process), woken by the backend's wake-ups, the busy answer's retryAfter or a
 * jittered backoff, until the request's signal aborts (deadline or cancel). `wait: 0` is one attempt.
 * After a local grant the next head waits for the release before attempting: one attempt per handoff.
 */
/** Whether `request` goes to the backend's native queued wait (etcd, ZooKeeper, Redis) rather than the engine's. */
export function waitsNatively(backend: LockBackend, request: { wait: number }): boolean {
  return request.wait > 0 && typeof backend.acquire === 'function';
}

export class AcquireRunner {
  private readonly lines = new WeakMap<LockBackend, LocalWaitQueue>();

  /**
   * `stats.attempts` counts backend attempts (a native queued wait counts as one). `onWait` is
   * called once the request really waits (queued or busy): the engine starts the wait's deadline
   * timer then, so a grant at the first attempt costs no timer. A native wait is not told here:
   * its backend reads `request.signal` before it sleeps, and the engine arms the deadline at that
   * first read (lock-acquirer.ts), so a native grant at the first attempt costs no timer either.
   */
  run(
    backend: LockBackend,
    label: string,
    request: BackendAcquireRequest,
    stats?: { attempts: number },
    onWait?: () => void,
  ): Promise<BackendAcquireResult> {
    if (waitsNatively(backend, request)) {
      if (stats) stats.attempts++;
      return backend.acquire!(request);
    }
    // Semaphore grants: several of this process may hold at once, so they do not queue in the
    // one-holder line; the backend's wake-ups and backoff drive their wait.
    if (request.permits !== undefined) {
      return pollAcquire(
        request,
        () => {
          if (stats) stats.attempts++;
          return backend.tryAcquire(request);
        },
        { backend: label, notifier: backend.wakeups, ...backend.waitPolicy, onWait },
      );
    }
    const line = this.line(backend, label);
    const attempt = () => {
      if (stats) stats.attempts++;
      return line.attempt(() => backend.tryAcquire(request));
    };
    const wakeups = backend.wakeups;
    // Handoffs need wake-ups that are live at once; a source that must prepare (subscribe) first is not.
    const listen = wakeups && !wakeups.prepare ? (key: string) => wakeups.listen(key) : undefined;
    return line.run(
      request,
      (handoff) =>
        pollAcquire(
          request,
          attempt,
          { backend: label, notifier: wakeups, ...backend.waitPolicy, onWait },
          handoff,
        ),
      listen,
      onWait,
    );
  }

  /** Waiters queued in this process's lines for `backend` (heads included). */
  waiting(backend: LockBackend): number {
    return this.lines.get(backend)?.waiting ?? 0;
  }

  private line(backend: LockBackend, label: string): LocalWaitQueue {
    let line = this.lines.get(backend);
    if (!line) this.lines.set(backend, (line = new LocalWaitQueue(label)));
    return line;
  }
}
