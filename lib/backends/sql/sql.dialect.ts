import type { BackendLock, LockMode } from '../../interfaces/lock-backend.interface';

/** One statement's answer, in the terms both drivers share. */
export interface SqlResult {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- driver rows are untyped records
  readonly rows: any[];
  /** Rows the statement changed (MySQL's affectedRows) or returned (pg's rowCount). */
  readonly affected: number;
  /** MySQL's insertId (what LAST_INSERT_ID(expr) set). */
  readonly insertId?: unknown;
}

/** A pooled connection, checked out for one operation (never kept across a wait). */
export interface SqlConnection {
  /** A statement with values: prepared on MySQL (execute), an extended query on pg. */
  run(text: string, values?: readonly unknown[]): Promise<SqlResult>;
  /** The text protocol (no server-side prepared statement); the same as run() on pg. */
  query(text: string, values?: readonly unknown[]): Promise<SqlResult>;
  release(): void;
  /** Closed instead of pooled: it may sit in an open transaction or be half-dead. */
  destroy(): void;
}

/**
 * The statements the shared flows send (documented with their SQL, in each dialect's schema file).
 * Values: a key as the dialect's `key()` binds it; `affected` of release/forceRelease counts the
 * rows deleted.
 */
export interface SqlStatements {
  readonly ddl: readonly string[];
  /** Sent first where the session's default isolation is not READ COMMITTED (MySQL). */
  readonly readCommitted?: string;
  readonly begin: string;
  /** [the dialect's mutexValues] */
  readonly mutex: string;
  /** [key]: owner, mode, left_us (µs left by the server's clock) and fence of every row, locked. */
  readonly holders: string;
  /** [key, owner] */
  readonly release: string;
  /** [key] */
  readonly forceRelease: string;
  /** [key, key]: after a delete (MySQL: the key's mutex row, once the key has no rows). */
  readonly dropKey?: string;
  /** [key]: the holder rows without locking (inspectBare: a table without the holder column). */
  readonly inspect: string;
  readonly inspectBare: string;
  /** [the dialect's tableRef]: one row when the lock table has the holder column. */
  readonly hasHolder: string;
  /** Adds the holder column where the DDL does not (MySQL). */
  readonly addHolder?: string;
  /** [key, owner, µs, µs]: writes a waiter's ticket, or only extends it (sql-tickets.ts). */
  readonly ticket: string;
  /** [key, owner]: a waiter that gave up deletes its ticket. */
  readonly dropTicket: string;
  /** [mode, key, owner, key]: a ticketed waiter's place, read without locks (MySQL). */
  readonly position?: string;
  /**
   * [the dialect's tableRef]: one row when the lock table refuses tickets (PostgreSQL: a table a
   * DBA made with an older mode check); the backend then keeps no line.
   */
  readonly refusesTickets?: string;
}

/** What the acquire transaction knows of a request. */
export interface SqlAttempt {
  /** As bound (the dialect's `key()`). */
  readonly key: unknown;
  readonly owner: string;
  readonly mode: LockMode;
  readonly ttl: number;
  readonly permits: number | undefined;
  /** The request waits (the engine will re-attempt). */
  readonly waits: boolean;
}

/** A grant's row: the request, its stored mode, its holder data (undefined: no such column). */
export interface SqlGrant extends SqlAttempt {
  readonly stored: string;
  readonly holder: string | undefined;
  /** Expired rows of the key were read: delete them first (a dead holder's lock is taken over). */
  readonly purge: boolean;
  /** The request has a ticket row (live or lapsed): the grant's row replaces it. */
  readonly ticket: boolean;
}

/**
 * What one database supplies to the shared SQL backend (SqlLockBackend) besides its wake-up
 * source: its statements, how a key is bound, its client adapter, and the steps whose statements
 * differ in shape.
 */
export interface SqlDialect<P, S extends SqlStatements = SqlStatements> {
  readonly statements: S;
  key(key: string): unknown;
  mutexValues(key: unknown): unknown[];
  readonly tableRef: string;
  connect(pool: P): Promise<SqlConnection>;
  /** Inserts the grant's row with the next fence, inside the open transaction. */
  grant(conn: SqlConnection, grant: SqlGrant): Promise<{ fencingToken: bigint; sentAt: number }>;
  /** Renews a watchdog tick's locks, batched; one answer per lock, in order: renewed. */
  renew(conn: SqlConnection, locks: readonly BackendLock[]): Promise<boolean[]>;
  /** Live held keys under `prefix`, at most `limit`: one range scan of the key index. */
  list(conn: SqlConnection, prefix: string, limit: number): Promise<string[]>;
  /** One sweep (SqlSweeper): rows expired for longer than `graceMs`. */
  sweep(conn: SqlConnection, graceMs: number): Promise<void>;
  /** Runs the DDL (serialized against concurrent start-ups where the database needs it). */
  createTables(conn: SqlConnection): Promise<void>;
}
