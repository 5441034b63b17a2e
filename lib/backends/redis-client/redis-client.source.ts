import { checkClient, CLOSE_TIMEOUT_MS, within } from '../../backend-kit';
import { RedisConnectionState } from './connection-state';
import { REDIS_CLIENT_METHODS, type RedisClientLike } from './redis-client.types';

/**
 * Where a backend's client comes from: `{ client }` (the user created it and keeps owning it: the
 * backend never closes it) or `{ clientFactory }` (the backend calls it once, on first use, and
 * QUITs what it made in close()). A failed factory call is retried at the next use.
 */
export class RedisClientSource<C extends RedisClientLike = RedisClientLike> {
  private made: Promise<C> | undefined;
  private closed = false;
  private client: C | undefined;
  private connection: RedisConnectionState | undefined;

  constructor(
    private readonly given: C | undefined,
    private readonly factory: (() => C | Promise<C>) | undefined,
    private readonly option = 'clientFactory',
  ) {
    if (given) this.use(given, RedisConnectionState.hasErrorListener(given));
  }

  /**
   * The client once known (at once for `{ client }`), while it may take commands: undefined while
   * it is connecting or known down, so that callers go through get(), which waits or fails fast.
   */
  get current(): C | undefined {
    const client = this.client;
    if (!client || (client as { status?: string }).status === 'ready') return client;
    return this.connection?.blocked ? undefined : client;
  }

  /** The client once known, whatever its connection's state (for options checks and tests). */
  get known(): C | undefined {
    return this.client;
  }

  /** Whether the backend made (and so closes) the client. */
  get owned(): boolean {
    return this.given === undefined;
  }

  /**
   * The client; a promise while it is being made or connecting, rejected with the connection's own
   * error (RedisConnectionDownError: ECONNREFUSED, ENOTFOUND) while the server is known down.
   */
  get(): C | Promise<C> {
    const client = this.client;
    if (!client) return (this.made ??= this.make()).then((made) => this.gated(made));
    return this.gated(client);
  }

  private gated(client: C): C | Promise<C> {
    const gate = this.connection?.gate();
    return gate ? gate.then(() => client) : client;
  }

  /** QUITs the client if the backend made it (falls back to disconnect when QUIT fails). */
  async close(): Promise<void> {
    this.closed = true;
    if (!this.owned || !this.made) return;
    // A factory that failed made no client: nothing to close (its error reached that caller).
    const client = await this.made.catch(() => undefined);
    if (client) await quit(client);
  }

  private use(client: C, recordErrors: boolean): void {
    this.client = client;
    this.connection = new RedisConnectionState(client as never, recordErrors);
  }

  private async make(): Promise<C> {
    const factory = this.factory as () => C | Promise<C>;
    try {
      const client = await factory();
      checkRedisClient(this.option, client);
      if (this.closed) {
        await quit(client);
        throw new Error('the backend was closed while its client was being made');
      }
      quietErrors(client);
      this.use(client, true);
      return client;
    } catch (error) {
      this.made = undefined;
      throw error;
    }
  }
}

/**
 * An `error` listener on a client the backend made: without one ioredis prints "Unhandled error
 * event" on every reconnect attempt. The outage itself reaches the operator once through the lock
 * logger (the engine's backendUnavailable, then backendRecovered), from the calls that fail.
 */
export function quietErrors(client: unknown): void {
  const c = client as { on?: (event: string, cb: (error: Error) => void) => unknown };
  if (typeof c.on === 'function') c.on('error', () => undefined);
}

/**
 * QUIT (graceful: waits for replies in flight), else disconnect: also when QUIT fails or gets no
 * answer within CLOSE_TIMEOUT_MS (a stopped server never answers it). Never rejects.
 */
export async function quit(client: RedisClientLike): Promise<void> {
  const outcome =
    typeof client.quit === 'function'
      ? await within(
          Promise.resolve().then(() => client.quit!()),
          CLOSE_TIMEOUT_MS,
        )
      : 'failed';
  if (outcome !== 'done') client.disconnect?.();
  stopSlotRefresh(client);
}

/**
 * Ends a closed Cluster's periodic slot refresh (its `slotsRefreshInterval` option) for good.
 * ioredis 5 and 6 clear its timer at disconnect() and quit(), but a refresh under way then arms it
 * again when it ends, and the client refreshes an empty pool every interval for ever: the process
 * never exits. A refresh asked for now runs its callback after that one's (on an empty pool it ends
 * at once), so it clears the timer last. Nothing for a standalone client.
 */
export function stopSlotRefresh(client: unknown): void {
  const c = client as {
    refreshSlotsCache?(cb: () => void): void;
    clearNodesRefreshInterval?(): void;
  };
  if (
    typeof c.refreshSlotsCache !== 'function' ||
    typeof c.clearNodesRefreshInterval !== 'function'
  )
    return;
  c.refreshSlotsCache(() => c.clearNodesRefreshInterval!());
}

/** Throws InvalidLockOptionsError unless `client` has every method the backends call. */
export function checkRedisClient(
  option: string,
  client: unknown,
  what = 'an ioredis Redis or Cluster client',
): void {
  checkClient(option, client, REDIS_CLIENT_METHODS, what);
}
