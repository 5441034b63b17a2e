import { ReleaseNotifier } from '../../backend-kit';

/**
 * The engine's wake-up source for a pub/sub backend: a ReleaseNotifier fed by the backend's
 * subscriber, whose `prepare()` (called before a waiter first sleeps) makes the subscription live.
 * Nothing subscribes until somebody waits, so a backend that never sees contention keeps one
 * connection.
 */
export class PubSubWakeups extends ReleaseNotifier {
  /**
   * Present until the subscription is live; then removed, since the engine re-attempts after each
   * prepare() (needed only while wake-ups were not live) and a live subscription resubscribes by
   * itself.
   */
  prepare?: (key: string) => Promise<void>;

  constructor(subscribe: () => Promise<void>) {
    super();
    this.prepare = async () => {
      await subscribe();
      this.prepare = undefined;
    };
  }
}
