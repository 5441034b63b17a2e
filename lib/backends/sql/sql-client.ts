import { CLOSE_TIMEOUT_MS, within } from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';

/** How a dialect checks and ends its driver's pool. */
export interface SqlPoolKind<P> {
  /** What a valid client is (for the error message). */
  readonly what: string;
  /** Validates a given client at once. */
  check(pool: unknown): P;
  end(pool: P): Promise<void>;
  /** Checks (and sets up) a pool the factory made; default `check`. */
  adopt?(pool: unknown): P;
}

/**
 * Where a SQL backend's pool comes from: `{ client }`, a pool the user created and keeps owning
 * (never ended by the backend), or `{ clientFactory }`, called once on first use; the backend owns
 * that pool and ends it in close(). A factory that fails is called again on the next use (the
 * database may have been down); a pool is never created after close().
 */
export class SqlClientSource<P> {
  private created: Promise<P> | undefined;
  private closed = false;

  private constructor(
    private readonly kind: SqlPoolKind<P>,
    private readonly client: P | undefined,
    private readonly factory?: () => P | Promise<P>,
  ) {}

  /** Validates `{ client }` xor `{ clientFactory }`. */
  static from<P>(
    options: { client?: unknown; clientFactory?: unknown },
    kind: SqlPoolKind<P>,
  ): SqlClientSource<P> {
    const { client, clientFactory } = options;
    if (client !== undefined && clientFactory !== undefined) {
      throw new InvalidLockOptionsError(
        'clientFactory',
        clientFactory,
        `either client or clientFactory, not both`,
      );
    }
    if (clientFactory === undefined) return new SqlClientSource(kind, kind.check(client));
    if (typeof clientFactory !== 'function') {
      throw new InvalidLockOptionsError(
        'clientFactory',
        clientFactory,
        `a function returning ${kind.what} (or a Promise of one)`,
      );
    }
    return new SqlClientSource(kind, undefined, clientFactory as () => P | Promise<P>);
  }

  /** The pool given, if any (known at construction). */
  get given(): P | undefined {
    return this.client;
  }

  get(): Promise<P> {
    if (this.client !== undefined) return Promise.resolve(this.client);
    if (this.closed) return Promise.reject(new Error('the backend was closed'));
    this.created ??= Promise.resolve()
      .then(() => this.factory!())
      .then((pool) => (this.kind.adopt ?? this.kind.check)(pool))
      .catch((error: unknown) => {
        this.created = undefined; // call the factory again on the next use
        throw error;
      });
    return this.created;
  }

  /** Ends the pool the factory created (never a pool the user gave). */
  async close(): Promise<void> {
    this.closed = true;
    const created = this.created;
    this.created = undefined;
    if (!created) return;
    // A factory that failed made no pool to end; its error already went to the call that used it.
    const pool = await created.catch(() => undefined);
    // Bounded: a stopped server never answers a pool's goodbye, and shutdown must not wait for it.
    if (pool !== undefined) await within(this.kind.end(pool), CLOSE_TIMEOUT_MS);
  }
}
