import { checkInteger } from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { SqlClientSource } from '../sql/sql-client';
import {
  resolveSqlOptions,
  type ResolvedSqlOptions,
  type SqlBackendOptions,
} from '../sql/sql.options';

/** One statement's answer, as mysql2/promise gives it: [rows or ResultSetHeader, fields]. */
export type MySqlResult = [unknown, unknown];

/** The part of a mysql2/promise pool connection this backend uses. */
export interface MySqlConnectionLike {
  query(sql: string, values?: unknown[]): Promise<MySqlResult>;
  execute(sql: string, values: (string | number | Buffer)[]): Promise<MySqlResult>;
  release(): void;
  destroy(): void;
}

/** The part of a mysql2/promise `Pool` this backend uses. */
export interface MySqlPoolLike {
  getConnection(): Promise<MySqlConnectionLike>;
  /** mysql2's core pool: its connectionLimit bounds how many connections wake-ups may take. */
  readonly pool?: { readonly config?: { readonly connectionLimit?: number } };
}

export interface MySqlLockBackendOptions extends SqlBackendOptions {
  /**
   * A mysql2/promise pool (`createPool(...)`); you keep owning it (and end it). Needs InnoDB. Or
   * give clientFactory.
   */
  client?: MySqlPoolLike;
  /**
   * Instead of client: makes the pool (e.g. `() => createPool(config.getOrThrow('MYSQL_URL'))`),
   * called once on first use; the backend owns it and ends it in close().
   */
  clientFactory?: () => MySqlPoolLike | Promise<MySqlPoolLike>;
  /**
   * Longest pause between two polls of a waiter without a wake-up, in ms (default 100): bounds the
   * handoff delay to another process when release notify is off (`blockingWaiters: 0`) or all
   * `blockingWaiters` already block.
   */
  maxPollDelay?: number;
  /**
   * How many waiters of this backend may block in the server at once, each on a pooled connection,
   * waiting to be notified of a key's release (GET_LOCK on the key's notify lock); one more
   * connection holds the notify locks of the keys this process holds. 0 = other processes'
   * releases are found by polling.
   * Default: 2, at most half the pool's connectionLimit minus one (a pool of 4 gives 1, of 2 or
   * less 0), so renewals always keep connections; 0 for a pool whose limit cannot be read.
   */
  blockingWaiters?: number;
}

export type ResolvedMySqlOptions = MySqlLockBackendOptions &
  ResolvedSqlOptions & {
    source: SqlClientSource<MySqlPoolLike>;
    blockingWaiters: number | undefined;
  };

/** Validates every option once, at construction; each failure names the option. */
export function resolveMySqlOptions(options: MySqlLockBackendOptions): ResolvedMySqlOptions {
  const o = resolveSqlOptions<MySqlLockBackendOptions, MySqlPoolLike>(options, {
    backend: 'MySqlLockBackend',
    extra: ['blockingWaiters'],
    defaultPollDelay: 100,
    pool: { what: 'a mysql2/promise Pool', check: checkMySqlPool, end: endPool },
  });
  const blockingWaiters =
    o.blockingWaiters === undefined
      ? undefined
      : checkInteger('blockingWaiters', o.blockingWaiters, 0, 64);
  return { ...o, blockingWaiters };
}

async function endPool(pool: MySqlPoolLike): Promise<void> {
  await (pool as MySqlPoolLike & { end?(): Promise<void> }).end?.();
}

/**
 * Default blockingWaiters for a pool: 2, at most half its connectionLimit minus one; 0 if unknown.
 */
export function defaultBlockingWaiters(pool: MySqlPoolLike): number {
  const limit = pool.pool?.config?.connectionLimit;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) return 0;
  return Math.max(0, Math.min(2, Math.floor(limit / 2) - 1));
}

/** mysql2's callback-style pool has getConnection(cb) too, and promise() to get the promise API. */
export function checkMySqlPool(client: unknown): MySqlPoolLike {
  const c = client as (MySqlPoolLike & { promise?: unknown }) | null | undefined;
  if (!c || typeof c.getConnection !== 'function' || typeof c.promise === 'function') {
    throw new InvalidLockOptionsError(
      'client',
      client,
      "a mysql2/promise Pool (createPool from 'mysql2/promise', or pool.promise())",
    );
  }
  return c;
}
