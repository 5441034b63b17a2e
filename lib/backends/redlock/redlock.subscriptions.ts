import { RedisSubscriber, type RedisClientLike } from '../redis-client';
import { gather, tally } from './redlock.quorum';

/**
 * One pub/sub connection per master (the shared RedisSubscriber), made on the first wait: a message
 * on any master reaches `onMessage`. A master that is down only loses its share of the
 * notifications (the others publish too, and waiters fall back to the holders' PTTLs and a
 * periodic retry); a reconnect calls `onReconnect` so waiters re-attempt.
 */
export class RedlockSubscriptions {
  private readonly subscribers: RedisSubscriber[];

  constructor(
    clients: readonly RedisClientLike[],
    channels: readonly string[],
    onMessage: (channel: string, message: string) => void,
    onReconnect: () => void,
  ) {
    this.subscribers = clients.map(
      (client) => new RedisSubscriber(() => client, channels, onMessage, onReconnect),
    );
  }

  /**
   * Subscribes on every master (once each); waits until a majority is live or 200 ms, never for a
   * dead master.
   */
  async ensure(quorum: number, signal?: AbortSignal): Promise<void> {
    const n = this.subscribers.length;
    // A release between our failed attempt and a live subscription is covered by the re-attempt
    // the engine makes right after prepare().
    await gather(
      n,
      (m) => this.subscribers[m].ensure(),
      (o) => tally(o, () => true).yes >= quorum,
      200,
      signal,
    );
  }

  /** Whether master `m`'s subscription is live (a release there can reach this process). */
  live(m: number): boolean {
    return this.subscribers[m]?.ready ?? false;
  }

  close(): void {
    this.subscribers.forEach((s) => s.close());
  }
}
