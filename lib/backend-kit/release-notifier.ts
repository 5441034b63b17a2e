import type { ReleaseListener, WakeupSource } from '../interfaces/lock-backend.interface';
import { SteadyMap } from './steady-collections';

/**
 * Local fan-out of "a lock was released" events to the waiters of this process. A backend feeds it
 * from its notification channel (Redis pub/sub, PostgreSQL NOTIFY, ...); waiters sleep on it
 * instead of polling. A waiter registers before it attempts, so a release between its failed
 * attempt and its sleep is never missed.
 */
export class ReleaseNotifier implements WakeupSource {
  private readonly waiters = new SteadyMap<string, Set<() => void>>();

  /** Starts listening for `key`; call wait() on the result after an attempt failed. */
  listen(key: string): ReleaseListener {
    let fired = false;
    let wake: (() => void) | undefined;
    const fire = () => {
      fired = true;
      wake?.();
    };
    let set = this.waiters.get(key);
    if (!set) this.waiters.set(key, (set = new Set()));
    set.add(fire);
    const dispose = () => {
      const s = this.waiters.get(key);
      if (!s) return;
      s.delete(fire);
      if (s.size === 0) this.waiters.delete(key);
    };
    return {
      wait: (ms, signal) =>
        new Promise<void>((resolve) => {
          // eslint-disable-next-line prefer-const -- assigned below; `done` may run before that
          let timer: NodeJS.Timeout | undefined;
          const done = () => {
            clearTimeout(timer);
            signal.removeEventListener('abort', done);
            dispose();
            resolve();
          };
          if (fired || signal.aborted) return done();
          wake = done;
          timer = setTimeout(done, Math.max(0, ms));
          signal.addEventListener('abort', done, { once: true });
        }),
      dispose,
    };
  }

  notify(key: string): void {
    const set = this.waiters.get(key);
    if (set) for (const fire of [...set]) fire();
  }

  /** Wakes every waiter (after a reconnect, when notifications may have been missed). */
  notifyAll(): void {
    for (const key of [...this.waiters.keys()]) this.notify(key);
  }

  get waiting(): number {
    let n = 0;
    for (const set of this.waiters.values()) n += set.size;
    return n;
  }
}

export type { ReleaseListener };
