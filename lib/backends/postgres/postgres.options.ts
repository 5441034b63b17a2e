import { checkBoolean } from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { resolveSqlOptions, SQL_OPTIONS, type ResolvedSqlOptions, type SqlBackendOptions } from '../sql/sql.options';
import type { PgListenClientLike } from './postgres.listener';

export interface PgQueryResultLike {
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

/** The part of a pg `Pool` this backend uses (Client/options: to open the dedicated LISTEN connection). */
export interface PgPoolLike {
  connect(): Promise<PgPoolClientLike>;
  readonly Client?: new (config: any) => PgListenClientLike & { connect(): Promise<unknown>; end(): Promise<void> };
  readonly options?: object;
}

export interface PostgresLockBackendOptions extends SqlBackendOptions {
  /** A pg `Pool`; you keep owning it (give it an 'error' listener, as pg requires). */
  client: PgPoolLike;
  /**
   * Wake waiters by LISTEN/NOTIFY (default true): one extra connection per backend, opened with the
   * pool's settings outside the pool (or checked out of it if the pool cannot make clients). false = poll only.
   */
  notifications?: boolean;
  /** Longest pause between two polls of a waiter without notifications, in ms (default 250). */
  maxPollDelay?: number;
}

export type ResolvedPostgresOptions = PostgresLockBackendOptions & ResolvedSqlOptions & { notifications: boolean };

const KNOWN = [...SQL_OPTIONS, 'notifications'].filter((o) => o !== 'clientFactory');

/** Validates every option once, at construction; each failure names the option. */
export function resolvePostgresOptions(options: PostgresLockBackendOptions): ResolvedPostgresOptions {
  const o = resolveSqlOptions<PostgresLockBackendOptions>('PostgresLockBackend', options, KNOWN, 250);
  checkPgPool(o.client);
  return { ...o, notifications: checkBoolean('notifications', o.notifications, true) };
}

/** A pg Client has connect() too, but cannot be checked out per attempt: a Pool is required. */
export function checkPgPool(client: unknown): PgPoolLike {
  const c = client as PgPoolLike | null | undefined;
  if (!c || typeof c.connect !== 'function' || 'connectionParameters' in c) {
    throw new InvalidLockOptionsError('client', client, "a pg Pool (new Pool(...) from 'pg'), not a Client");
  }
  return c;
}
