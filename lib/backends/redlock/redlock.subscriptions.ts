import type { ReleaseNotifier } from '../../backend-kit';
import { gather, tally, type RedlockClientLike, type RedlockSubscriberLike } from './redlock.quorum';

/**
 * One pub/sub connection per master, made on the first wait, feeding the backend's ReleaseNotifier:
 * a release announced on any master wakes this process's waiters for that key. A master that is
 * down only loses its share of the notifications (the others publish too, and waiters fall back to
 * the holders' PTTLs and a periodic retry).
 */
export class RedlockSubscriptions {
  private readonly subscribers: (RedlockSubscriberLike | undefined)[];
  private readonly subscribed: (Promise<void> | undefined)[];
  private closed = false;

  constructor(
    private readonly clients: readonly RedlockClientLike[],
    private readonly channel: string,
    private readonly notifier: ReleaseNotifier,
  ) {
    this.subscribers = clients.map(() => undefined);
    this.subscribed = clients.map(() => undefined);
  }

  /** Subscribes on every master (once each); waits until a majority is live or 200 ms, never for a dead master. */
  async ensure(quorum: number, signal: AbortSignal): Promise<void> {
    if (this.closed) return;
    const pending = this.clients.map((client, m) => this.subscribed[m] ?? this.subscribe(client, m));
    // A release between our failed attempt and a live subscription is covered by the re-attempt
    // pollAcquire makes after registering its listener.
    await gather(pending.length, (m) => pending[m], (o) => tally(o, () => true).yes >= quorum, 200, signal);
  }

  close(): void {
    this.closed = true;
    this.subscribers.forEach((s) => s?.disconnect());
    this.subscribers.fill(undefined);
    this.subscribed.fill(undefined);
  }

  private subscribe(client: RedlockClientLike, m: number): Promise<void> {
    // We resubscribe ourselves: ioredis' own resubscribe leaves a rejection unhandled when the
    // connection closes mid-way (a master restarting while we shut down).
    const sub = client.duplicate({ autoResubscribe: false });
    this.subscribers[m] = sub;
    sub.on('message', (channel, message) => {
      if (channel === this.channel) this.notifier.notify(message);
    });
    // After a reconnect, releases may have been missed: resubscribe, and let every waiter re-attempt.
    sub.on('ready', () => {
      if (this.subscribers[m] === sub) sub.subscribe(this.channel).catch(() => undefined);
      this.notifier.notifyAll();
    });
    sub.on('error', () => undefined);
    const done = sub.subscribe(this.channel).then(() => undefined);
    this.subscribed[m] = done.catch(() => {
      if (this.subscribers[m] !== sub) return;
      sub.disconnect();
      this.subscribers[m] = undefined;
      this.subscribed[m] = undefined;
    });
    return done;
  }
}
