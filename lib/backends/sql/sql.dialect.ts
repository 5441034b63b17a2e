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
  /** The text protocol (no server-side prepared statement); what run() is on pg. */
  query(text: string, values?: readonly unknown[]): Promise<SqlResult>;
  /** Back to the pool. */
  release(): void;
  /** Closed instead of pooled: it may sit in an open transaction or be half-dead. */
  destroy(): void;
}

/**
 * The statements the shared flows send. Only the table name (validated) is spliced in; every
 * value is a parameter, and a key is bound as the dialect's `key()` makes it.
 */
export interface SqlStatements {
  readonly ddl: readonly string[];
  /** Sent before a statement that must run READ COMMITTED, where the session default is not. */
  readonly readCommitted?: string;
  /** Opens the acquire's transaction (READ COMMITTED). */
  readonly begin: string;
  /** Takes the key's mutex until COMMIT (values: the dialect's mutexValues). */
  readonly mutex: string;
  /** Locks and reads every row of the key: owner, mode, left_us (µs left, server clock), fence. */
  readonly holders: string;
  /** Owner-checked delete of one row [key, owner]; `affected` counts the rows deleted. */
  readonly release: string;
  /** Deletes every holder row of a key [key] whoever owns it; `affected` as release. */
  readonly forceRelease: string;
  /** Clean-up after a delete [key, key] (MySQL: the key's mutex row once it has no rows). */
  readonly dropKey?: string;
  /** The key's holder rows, read without locking [key] (inspectBare: no holder column). */
  readonly inspect: string;
  readonly inspectBare: string;
  /** One row when the lock table has the holder column [the dialect's tableRef]. */
  readonly hasHolder: string;
  /** Adds the holder column to an older table (where the DDL does not do it itself). */
  readonly addHolder?: string;
}

/** What the acquire transaction knows of a request. */
export interface SqlAttempt {
  /** The key as bound (the dialect's `key()`). */
  readonly key: unknown;
  readonly owner: string;
  readonly mode: LockMode;
  readonly ttl: number;
  readonly permits: number | undefined;
  /** The request waits (the engine will re-attempt). */
  readonly waits: boolean;
}

/** The grant's row: the request, its stored mode and holder data, and whether to purge first. */
export interface SqlGrant extends SqlAttempt {
  readonly stored: string;
  /** The holder's data, or undefined when the table has no holder column. */
  readonly holder: string | undefined;
  /** Expired rows of the key were read: delete them first (a dead holder's lock is taken over). */
  readonly purge: boolean;
}

/**
 * What one SQL database supplies to the shared backend (SqlLockBackend): its statements, how a
 * key is bound, its client adapter, and the few steps whose statements differ in shape (the grant
 * with its fence, the batched renewal, the listing, the sweep, creating the tables).
 */
export interface SqlDialect<P, S extends SqlStatements = SqlStatements> {
  readonly statements: S;
  /** A key as bound to a statement (MySQL: its UTF-8 bytes; pg: the text). */
  key(key: string): unknown;
  mutexValues(key: unknown): unknown[];
  /** hasHolder's value. */
  readonly tableRef: string;
  /** Checks a connection out of the pool. */
  connect(pool: P): Promise<SqlConnection>;
  /** Inserts the grant's row with the next fence (the transaction is open); no COMMIT. */
  grant(conn: SqlConnection, grant: SqlGrant): Promise<{ fencingToken: bigint; sentAt: number }>;
  /** Renews a watchdog tick's locks, batched; one answer per lock, in order: renewed. */
  renew(conn: SqlConnection, locks: readonly BackendLock[]): Promise<boolean[]>;
  /** Live held keys under `prefix`, at most `limit`, as one range scan of the key index. */
  list(conn: SqlConnection, prefix: string, limit: number): Promise<string[]>;
  /** One sweep (see SqlSweeper): rows expired for longer than `graceMs`. */
  sweep(conn: SqlConnection, graceMs: number): Promise<void>;
  /** Runs the DDL (serialized against concurrent start-ups where the database needs it). */
  createTables(conn: SqlConnection): Promise<void>;
}
