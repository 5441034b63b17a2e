import { checkBoolean, CLOSE_TIMEOUT_MS, within } from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { SqlClientSource } from '../sql/sql-client';
import {
  resolveSqlOptions,
  type ResolvedSqlOptions,
  type SqlBackendOptions,
} from '../sql/sql.options';

/** A pg notification as pg's Client emits it. */
export interface PgNotification {
  channel: string;
  payload?: string;
}

/** The part of a pg `Client` (or a checked-out PoolClient) the listener uses. */
export interface PgListenClientLike {
  connect?(): Promise<unknown>;
  query(text: string): Promise<unknown>;
  on(event: 'notification', cb: (message: PgNotification) => void): unknown;
  on(event: 'error', cb: (error: Error) => void): unknown;
  on(event: 'end', cb: () => void): unknown;
  removeAllListeners(event?: string): unknown;
}

export interface PgQueryResultLike {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- pg rows are untyped records
  rows: any[];
  rowCount: number | null;
}

/** The part of a pg PoolClient this backend uses. */
export interface PgPoolClientLike {
  query(text: string, values?: unknown[]): Promise<PgQueryResultLike>;
  release(destroy?: boolean | Error): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
  removeListener(event: 'error', listener: (error: Error) => void): unknown;
}

/**
 * The part of a pg `Pool` this backend uses (Client/options: to open the dedicated LISTEN
 * connection).
 */
export interface PgPoolLike {
  connect(): Promise<PgPoolClientLike>;
  readonly Client?: new (
    // pg's ClientConfig, not imported:
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    config: any,
  ) => PgListenClientLike & { connect(): Promise<unknown>; end(): Promise<void> };
  readonly options?: object;
}

export interface PostgresLockBackendOptions extends SqlBackendOptions {
  /**
   * A pg `Pool`; you keep owning it (give it an 'error' listener, as pg requires). Or give
   * clientFactory.
   */
  client?: PgPoolLike;
  /**
   * Instead of client: makes the pool (e.g. `() => new Pool({ connectionString })`), called once on
   * first use; the backend owns it (adds an 'error' listener for idle clients) and ends it in
   * close().
   */
  clientFactory?: () => PgPoolLike | Promise<PgPoolLike>;
  /**
   * Wake waiters by LISTEN/NOTIFY (default true): one extra connection per backend, opened with the
   * pool's settings outside the pool (or checked out of it if the pool cannot make clients). false
   * = poll only.
   */
  notifications?: boolean;
  /** Longest pause between two polls of a waiter without notifications, in ms (default 250). */
  maxPollDelay?: number;
}

export type ResolvedPostgresOptions = PostgresLockBackendOptions &
  ResolvedSqlOptions & { notifications: boolean; source: SqlClientSource<PgPoolLike> };

/** Validates every option once, at construction; each failure names the option. */
export function resolvePostgresOptions(
  options: PostgresLockBackendOptions,
): ResolvedPostgresOptions {
  const o = resolveSqlOptions<PostgresLockBackendOptions, PgPoolLike>(options, {
    backend: 'PostgresLockBackend',
    extra: ['notifications'],
    defaultPollDelay: 250,
    pool: {
      what: "a pg Pool (new Pool(...) from 'pg')",
      check: checkPgPool,
      end: endPool,
      adopt: (pool) => ownPool(checkPgPool(pool)),
    },
  });
  return { ...o, notifications: checkBoolean('notifications', o.notifications, true) };
}

/**
 * A pool the factory made is ours: idle clients that die with the server must not crash the
 * process.
 */
function ownPool(pool: PgPoolLike): PgPoolLike {
  (pool as PgPoolLike & { on?(event: 'error', cb: () => void): unknown }).on?.(
    'error',
    () => undefined,
  );
  return pool;
}

/**
 * Ends a pool the factory made. pg's end() waits for every client, and a client still connecting
 * to a server that never answers (a black hole, a dropped SYN) waits for ever, its socket keeping
 * the process alive after close(): past half the close bound, the pool's sockets are destroyed.
 */
async function endPool(pool: PgPoolLike): Promise<void> {
  const p = pool as PgPoolLike & { end?(): Promise<void> };
  if (typeof p.end !== 'function') return;
  const outcome = await within(
    Promise.resolve().then(() => p.end!()),
    CLOSE_TIMEOUT_MS / 2,
  );
  if (outcome !== 'done') destroyPgSockets(pool);
}

/** The sockets of a pg Pool's clients (pg-pool keeps them in `_clients`), destroyed. */
function destroyPgSockets(pool: unknown): void {
  const clients = (pool as { _clients?: unknown })._clients;
  if (!Array.isArray(clients)) return;
  for (const c of clients) destroyPgClientSocket(c);
}

/** A pg Client's socket, destroyed (a client whose end() cannot complete). */
export function destroyPgClientSocket(client: unknown): void {
  const stream = (client as { connection?: { stream?: { destroy?(): void } } })?.connection?.stream;
  if (typeof stream?.destroy === 'function') stream.destroy();
}

/** A pg Client has connect() too, but cannot be checked out per attempt: a Pool is required. */
export function checkPgPool(client: unknown): PgPoolLike {
  const c = client as PgPoolLike | null | undefined;
  if (!c || typeof c.connect !== 'function' || 'connectionParameters' in c) {
    throw new InvalidLockOptionsError(
      'client',
      client,
      "a pg Pool (new Pool(...) from 'pg'), not a Client",
    );
  }
  return c;
}
