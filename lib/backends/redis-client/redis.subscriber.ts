import { stopSlotRefresh } from './redis-client.source';
import type { RedisClientLike, RedisSubscriberLike } from './redis-client.types';

/**
 * One pub/sub connection (a duplicate of a client), made on first need and shared by every waiter
 * of a backend. `ensure()` subscribes once (concurrent callers share the attempt; a failure lets
 * the next caller retry). After a reconnect it resubscribes itself and calls `onReconnect`, since
 * messages sent while it was away are lost: the backend then lets its waiters re-check.
 */
export class RedisSubscriber {
  private connection: RedisSubscriberLike | undefined;
  private subscribed: Promise<void> | undefined;
  private live = false;
  private closed = false;

  constructor(
    private readonly client: () => RedisClientLike | Promise<RedisClientLike>,
    private readonly channels: readonly string[],
    private readonly onMessage: (channel: string, message: string) => void,
    private readonly onReconnect: () => void,
  ) {}

  /** true while a first subscription is on its way. */
  get opening(): boolean {
    return this.subscribed !== undefined && !this.live;
  }

  /** true once every channel is subscribed (and until the connection drops). */
  get ready(): boolean {
    return this.live;
  }

  ensure(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return (this.subscribed ??= this.open());
  }

  close(): void {
    this.closed = true;
    this.live = false;
    if (this.connection) disconnect(this.connection);
    this.connection = undefined;
    this.subscribed = undefined;
  }

  private async open(): Promise<void> {
    const client = await this.client();
    // Standalone: we resubscribe ourselves (ioredis' own resubscribe leaves a rejection unhandled
    // when the connection closes mid-way). A Cluster's duplicate() takes other arguments.
    const override = [{ autoResubscribe: false }] as never[];
    const sub = client.isCluster ? client.duplicate() : client.duplicate(...override);
    this.connection = sub;
    sub.on('message', (channel, message) => this.onMessage(channel, message));
    sub.on('error', () => undefined);
    sub.on('ready', () => {
      if (this.connection !== sub || this.closed) return;
      if (!this.live) return; // the first 'ready': subscribe() below is already on its way
      // A failed resubscribe leaves waiters on their re-checks (onReconnect below makes every one
      // re-check now); the connection's next 'ready' subscribes again.
      this.subscribeAll(sub).catch(() => undefined);
      this.onReconnect();
    });
    try {
      await this.subscribeAll(sub);
      this.live = !this.closed;
    } catch (error) {
      if (this.connection === sub) {
        disconnect(sub);
        this.connection = undefined;
        this.subscribed = undefined;
      }
      if (!this.closed) throw error;
    }
  }

  private async subscribeAll(sub: RedisSubscriberLike): Promise<void> {
    await Promise.all(this.channels.map((c) => sub.subscribe(c)));
  }
}

/** Closes our pub/sub connection (a Cluster's too, with its slot refresh: stopSlotRefresh). */
function disconnect(sub: RedisSubscriberLike): void {
  sub.disconnect();
  stopSlotRefresh(sub);
}
