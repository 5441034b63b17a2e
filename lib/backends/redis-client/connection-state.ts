import { reconnectAfterSentinelRace } from '../../backend-kit/sentinel-reconnect';

/**
 * What a backend knows of its ioredis client's connection, so that a call made while the server is
 * known to be down fails at once with the connection's own error (`ECONNREFUSED`, `ENOTFOUND`)
 * instead of sitting in ioredis's offline queue until the caller's budget runs out.
 *
 * "Known down" is the client's own word, its status `reconnecting`, `close` or `end` (ioredis sets
 * it once a connection attempt failed or the connection dropped), for a client that never reached
 * its server (a bad URL, a server down since start-up) or has not reached it for DOWN_GRACE_MS. A
 * client that was up and just lost its server (a failover, a restart) is not known down yet: calls
 * wait for its reconnection within their budget, so a wait rides out a failover instead of failing
 * at its first refused connection. A client that is connecting for the first time is not known down
 * either; a call then waits for it as ioredis would, but fails with the connection's error as soon
 * as the attempt fails, not at its budget.
 */
const DOWN = new Set(['reconnecting', 'close', 'end']);
/** How long a client that was up may be without its server before calls fail at once. */
export const DOWN_GRACE_MS = 10_000;
const CONNECTING = new Set(['connecting', 'connect']);

interface Watchable {
  readonly status?: string;
  on?(event: string, cb: (arg?: unknown) => void): unknown;
  listenerCount?(event: string): number;
}

/** Thrown (as a rejection) by a call made while the client is known down. */
export class RedisConnectionDownError extends Error {
  readonly code: string;
  constructor(status: string, cause: Error | undefined) {
    const why = cause ? describeCause(cause) : `the client is ${status}`;
    super(`the Redis server is not reachable: ${why}`, { cause });
    this.name = 'RedisConnectionDownError';
    this.code = codeOf(cause) ?? 'REDIS_CONNECTION_DOWN';
  }
}

export class RedisConnectionState {
  private lastError: Error | undefined;
  /** Whether the client ever was ready, and since when it is not (performance.now()). */
  private everReady: boolean;
  private downSince: number | undefined;
  private attempt: { promise: Promise<void>; fail: (e: Error) => void; ok: () => void } | undefined;

  /**
   * Watches `client`. `recordErrors`: listen to its `error` events (the backend made the client, or
   * the user's client has an error listener already); else only its status is read, because an
   * `error` listener of ours would silence the "Unhandled error event" ioredis prints for a user's
   * client.
   */
  constructor(
    private readonly client: Watchable,
    recordErrors: boolean,
  ) {
    this.everReady = client.status === 'ready';
    if (typeof client.on !== 'function') return;
    reconnectAfterSentinelRace(client);
    client.on('ready', () => {
      this.everReady = true;
      this.downSince = undefined;
      this.lastError = undefined;
      this.attempt?.ok();
    });
    const failed = (error?: unknown) => {
      if (client.status === 'ready') return;
      this.downSince ??= performance.now();
      // Duck-typed: a socket's error may come from another realm (a test VM) than our Error.
      if (typeof (error as Error | undefined)?.message === 'string')
        this.lastError = error as Error;
      this.attempt?.fail(new RedisConnectionDownError(client.status ?? 'down', this.lastError));
    };
    if (recordErrors) client.on('error', failed);
    client.on('reconnecting', () => failed());
    client.on('end', () => failed());
  }

  /** Whether an `error` listener is there already (the user's): adding ours changes no output. */
  static hasErrorListener(client: unknown): boolean {
    const c = client as Watchable;
    return typeof c.listenerCount === 'function' && c.listenerCount('error') > 0;
  }

  /**
   * Whether a command must go through gate() first (connecting, or known down): exactly when gate()
   * answers a promise, so a caller that waits for gate() and asks again never spins.
   */
  get blocked(): boolean {
    const status = this.client.status;
    if (status === undefined || status === 'ready') return false;
    return (DOWN.has(status) || CONNECTING.has(status)) && !this.ridingOut();
  }

  /** A client that was up and lost its server under DOWN_GRACE_MS ago (a failover, a restart). */
  private ridingOut(): boolean {
    return (
      this.everReady && performance.now() - (this.downSince ?? performance.now()) < DOWN_GRACE_MS
    );
  }

  /**
   * undefined: the client may take commands now (ready, lazy, or unknown). Else a promise: rejected
   * at once when the client is known down, or settled by the connection attempt in progress.
   */
  gate(): Promise<void> | undefined {
    const status = this.client.status;
    if (status === 'ready' || status === undefined) return undefined;
    // A client that was up and lost its server moments ago: commands queue for its reconnection,
    // as ioredis has them, within the caller's budget (a failover is not an outage yet).
    if (this.ridingOut()) return undefined;
    if (DOWN.has(status))
      return Promise.reject(new RedisConnectionDownError(status, this.lastError));
    if (!CONNECTING.has(status)) return undefined;
    if (!this.attempt) {
      let ok!: () => void;
      let fail!: (e: Error) => void;
      const promise = new Promise<void>((resolve, reject) => {
        ok = resolve;
        fail = reject;
      });
      // Settled once: the next connection attempt gets a new one.
      const done = () => (this.attempt = undefined);
      this.attempt = {
        promise,
        ok: () => (done(), ok()),
        fail: (e) => (done(), fail(e)),
      };
      promise.catch(() => undefined);
    }
    return this.attempt.promise;
  }
}

function codeOf(error: Error | undefined): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{1,64}$/.test(code) ? code : undefined;
}

/** `ECONNREFUSED (connect ECONNREFUSED 127.0.0.1:1)`: the code first, for logs and grep. */
function describeCause(error: Error): string {
  const code = codeOf(error);
  return code && !error.message.startsWith(code) ? `${code} (${error.message})` : error.message;
}
