import { ReleaseNotifier } from '../../backend-kit';

/**
 * The engine's wake-up source for a pub/sub backend: a ReleaseNotifier fed by the backend's
 * subscriber, whose `prepare()` (called before a waiter first sleeps) makes the subscription live.
 * Nothing subscribes until somebody waits, so a backend that never sees contention keeps one
 * connection.
 */
export class PubSubWakeups extends ReleaseNotifier {
  constructor(private readonly subscribe: () => Promise<void>) {
    super();
  }

  prepare(): Promise<void> {
    return this.subscribe();
  }
}
