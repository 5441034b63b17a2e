import type {
  BackendAcquireRequest,
  BackendAcquireResult,
  LockBackend,
} from '../../interfaces/lock-backend.interface';
import type { GrantDriver } from './grant-driver';
import { pollAcquire, type PollAcquireOptions } from './poll-wait';
import { LocalWaitQueue } from './wait-line';

/**
 * The engine's wait, for every grant: a FIFO line per key in this process (only its head
 * attempts, so a release wakes one waiter per process), woken by the backend's wake-ups, the busy
 * answer's retryAfter or a jittered backoff, until the request's signal aborts (deadline or
 * cancel). `wait: 0` is one attempt. After a local grant the next head waits for the release
 * before attempting: one attempt per handoff. Grants that many callers of one process may hold at
 * once (a semaphore's permits) do not queue in the line, nor do waiters of a backend that queues
 * them itself (LockBackend.leave): they wait on the busy answer's wake, and leave the backend's
 * queue when they give up.
 */
export class AcquireRunner {
  private readonly lines = new WeakMap<LockBackend, LocalWaitQueue>();
  private readonly policies = new WeakMap<LockBackend, PollAcquireOptions>();

  /** `record.attempts` counts attempts; `onWait` is called once the request really waits. */
  run(
    backend: LockBackend,
    driver: GrantDriver,
    label: string,
    request: BackendAcquireRequest,
    record: { attempts: number },
    onWait: () => void,
  ): Promise<BackendAcquireResult> {
    const options = this.options(backend, label);
    // Many holders, or waiters the system itself queues (leave): no line of ours orders them.
    if (driver.manyHolders || driver.leave) {
      const attempt = () => {
        record.attempts++;
        return driver.tryAcquire(request);
      };
      return pollAcquire(request, attempt, options, undefined, onWait, driver.leave);
    }
    const line = this.line(backend, label);
    const attempt = () => {
      record.attempts++;
      return line.attempt(() => driver.tryAcquire(request));
    };
    const wakeups = backend.wakeups;
    // Handoffs need wake-ups that are live at once; a source that must prepare (subscribe) first is
    // not.
    const listen = wakeups && !wakeups.prepare ? (key: string) => wakeups.listen(key) : undefined;
    return line.run(
      request,
      (handoff) => pollAcquire(request, attempt, options, handoff, onWait),
      listen,
      onWait,
    );
  }

  /** Waiters queued in this process's lines for `backend` (heads included). */
  waiting(backend: LockBackend): number {
    return this.lines.get(backend)?.waiting ?? 0;
  }

  /** The wait's options for `backend` (its label, wake-ups and policy), made once per backend. */
  private options(backend: LockBackend, label: string): PollAcquireOptions {
    const cached = this.policies.get(backend);
    if (cached?.backend === label) return cached;
    const options = { backend: label, notifier: backend.wakeups, ...backend.waitPolicy };
    this.policies.set(backend, options);
    return options;
  }

  private line(backend: LockBackend, label: string): LocalWaitQueue {
    let line = this.lines.get(backend);
    if (!line) this.lines.set(backend, (line = new LocalWaitQueue(label)));
    return line;
  }
}
