import { MAX_HOLDER_DATA } from '../../backend-kit';
import { ddlScript, HOLDER_COLUMN } from '../sql/sql-schema';
import { SWEEP_BATCH } from '../sql/sql-sweeper';
import { QUEUED } from '../sql/sql-tickets';

/**
 * Tables and statements of the MySQL/MariaDB backend. Only the table name (a validated plain
 * identifier, see checkTableName) is spliced into SQL; every value is a `?` parameter of a
 * prepared statement. Times are DATETIME(3) in UTC from the server's UTC_TIMESTAMP(3): immune to
 * the session time zone, DST and the application's clock.
 *
 * <table>        one row per holder: an exclusive holder, one of several shared holders, or one
 *                permit of a semaphore (mode 'semaphore': fits the VARCHAR(9) of every install, so
 *                the semaphores of this version need no migration). Also a waiter's TICKET (mode
 *                'queued'): expires_at is when it lapses, fence holds its arrival (µs since
 *                2000-01-01 by the server's UTC clock); see sql-tickets.ts.
 * <table>_keys   one row per key while it has holders: the per-key mutex that acquires lock.
 * <table>_fence  one row: the fencing counter, incremented inside the acquire's transaction.
 */
export type MySqlStatements = ReturnType<typeof mysqlStatements>;

/**
 * The only batch sizes a renew statement comes in: every distinct statement text is
 * one more server-side prepared statement on every pooled connection, and the server-wide table of
 * them (max_prepared_stmt_count) is shared with every other application. A batch is padded to the
 * next size, and one over the largest is sent in chunks of it: at most 4 renew and 4 alive shapes.
 */
export const RENEW_SHAPES = [1, 8, 32, 128] as const;
/** A padding row: the empty key matches no lock (keys are non-empty). */
export const PAD_ROW = { key: Buffer.alloc(0), owner: '' } as const;

/** The shape a batch of `n` (1..128) rows is sent in. */
export function renewShape(n: number): number {
  return RENEW_SHAPES.find((size) => size >= n) ?? RENEW_SHAPES[RENEW_SHAPES.length - 1];
}

export function mysqlStatements(table: string) {
  const t = `\`${table}\``;
  const keys = `\`${table}_keys\``;
  const fence = `\`${table}_fence\``;
  const rows = (n: number) =>
    Array.from({ length: n }, (_, i) =>
      i === 0 ? 'SELECT ? AS k, ? AS o, ? AS us' : 'SELECT ?, ?, ?',
    ).join(' UNION ALL ');
  return {
    // The mode column's COMMENT keeps its first wording ('a seat': a semaphore permit), so the DDL
    // of existing installs and of mysqlDdl() stays the same.
    ddl: [
      `CREATE TABLE IF NOT EXISTS ${t} (
  lock_key   VARBINARY(2048) NOT NULL COMMENT 'full lock key as UTF-8 bytes: binary, so no case folding or trailing-space padding',
  owner      CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT '128-bit owner token, hex',
  mode       VARCHAR(9) CHARACTER SET ascii NOT NULL COMMENT 'exclusive, shared, or semaphore (a seat)',
  expires_at DATETIME(3) NOT NULL COMMENT 'UTC, database server clock',
  fence      BIGINT UNSIGNED NOT NULL COMMENT 'fencing token of this grant',
  holder     VARCHAR(${MAX_HOLDER_DATA}) CHARACTER SET utf8mb4 NULL COMMENT 'the holder: {"host","pid","instance"} (JSON text)',
  PRIMARY KEY (lock_key, owner)
) ENGINE=InnoDB`,
      `CREATE TABLE IF NOT EXISTS ${keys} (
  lock_key VARBINARY(2048) NOT NULL PRIMARY KEY
) ENGINE=InnoDB`,
      `CREATE TABLE IF NOT EXISTS ${fence} (
  id    TINYINT UNSIGNED NOT NULL PRIMARY KEY,
  value BIGINT UNSIGNED NOT NULL
) ENGINE=InnoDB`,
      `INSERT IGNORE INTO ${fence} (id, value) VALUES (1, 0)`,
    ],
    readCommitted: 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED',
    begin: 'START TRANSACTION',
    // Creates or X-locks the key's mutex row: concurrent acquires of one key queue here (briefly,
    // never across a wait), acquires of other keys do not.
    mutex: `INSERT INTO ${keys} (lock_key) VALUES (?) ON DUPLICATE KEY UPDATE lock_key = lock_key`,
    // Locks every row of the key, holders and tickets (so no renewal can slip in), and reads each
    // one's time left (and a ticket's arrival, in fence).
    holders: `SELECT owner, mode, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), expires_at) AS left_us, fence FROM ${t} WHERE lock_key = ? ORDER BY owner FOR UPDATE`,
    purge: `DELETE FROM ${t} WHERE lock_key = ? AND expires_at <= UTC_TIMESTAMP(3)`,
    // LAST_INSERT_ID(expr) hands the new value back in the OK packet (insertId): one round trip.
    // The row stays locked until COMMIT, so grants of one key get strictly growing tokens.
    nextFence: `INSERT INTO ${fence} (id, value) VALUES (1, LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE value = LAST_INSERT_ID(value + 1)`,
    // The grant; it replaces the grantee's own ticket (same primary key) if it had one.
    // With the holder's data when the table has the column (insertBare: without).
    insert: `INSERT INTO ${t} (lock_key, owner, mode, expires_at, fence, ${HOLDER_COLUMN}) VALUES (?, ?, ?, UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND, ?, ?) ON DUPLICATE KEY UPDATE mode = ?, expires_at = UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND, fence = ?, ${HOLDER_COLUMN} = ?`,
    insertBare: `INSERT INTO ${t} (lock_key, owner, mode, expires_at, fence) VALUES (?, ?, ?, UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND, ?) ON DUPLICATE KEY UPDATE mode = ?, expires_at = UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND, fence = ?`,
    hasHolder: `SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = '${HOLDER_COLUMN}'`,
    // Upgrade of a table made before holder identities (run only when hasHolder found no column).
    addHolder: `ALTER TABLE ${t} ADD COLUMN ${HOLDER_COLUMN} VARCHAR(${MAX_HOLDER_DATA}) CHARACTER SET utf8mb4 NULL`,
    // A waiter's ticket: dated with its arrival once, later attempts only extend it (never a holder
    // row).
    ticket: `INSERT INTO ${t} (lock_key, owner, mode, expires_at, fence) VALUES (?, ?, '${QUEUED}', UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND, TIMESTAMPDIFF(MICROSECOND, '2000-01-01', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE expires_at = IF(mode = '${QUEUED}', UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND, expires_at)`,
    dropTicket: `DELETE FROM ${t} WHERE lock_key = ? AND owner = ? AND mode = '${QUEUED}'`,
    // A ticketed waiter's cheap place check (one autocommit read, no lock): live tickets older than
    // its own, and live holders that conflict with its mode. No ticket of its own: no row, both
    // NULL.
    position: `SELECT SUM(h.mode = '${QUEUED}' AND h.fence < m.fence) AS ahead, SUM(h.mode <> '${QUEUED}' AND (h.mode <> 'shared' OR ? <> 'shared')) AS blockers FROM ${t} h JOIN (SELECT fence FROM ${t} WHERE lock_key = ? AND owner = ? AND mode = '${QUEUED}') m WHERE h.lock_key = ? AND h.expires_at > UTC_TIMESTAMP(3)`,
    release: `DELETE FROM ${t} WHERE lock_key = ? AND owner = ?`,
    // Drops the mutex row of a key without holders; an acquire racing with it simply re-creates it.
    dropKey: `DELETE FROM ${keys} WHERE lock_key = ? AND NOT EXISTS (SELECT 1 FROM ${t} WHERE lock_key = ?)`,
    // Operators: a plain read (no locks) of the key's rows (holders, and the tickets counted as
    // waiters), and the holders' delete whatever the owner (waiters keep their tickets, so their
    // places in line).
    inspect: `SELECT owner, mode, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), expires_at) AS left_us, fence, ${HOLDER_COLUMN} FROM ${t} WHERE lock_key = ?`,
    inspectBare: `SELECT owner, mode, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), expires_at) AS left_us, fence FROM ${t} WHERE lock_key = ?`,
    forceRelease: `DELETE FROM ${t} WHERE lock_key = ? AND mode <> '${QUEUED}'`,
    // Held keys in [from, to) (to NULL: no upper bound), a range of the primary key, LIMIT bounded.
    list: `SELECT DISTINCT lock_key FROM ${t} WHERE lock_key >= ? AND (? IS NULL OR lock_key < ?) AND expires_at > UTC_TIMESTAMP(3) AND mode <> '${QUEUED}' ORDER BY lock_key LIMIT ?`,
    // Sweeper (see sql-sweeper.ts): rows expired for over a minute, then mutex rows without
    // holders.
    sweepHolders: `DELETE FROM ${t} WHERE expires_at < UTC_TIMESTAMP(3) - INTERVAL ? MICROSECOND LIMIT ${SWEEP_BATCH}`,
    sweepKeys: `DELETE k FROM ${keys} AS k LEFT JOIN ${t} AS h ON h.lock_key = k.lock_key WHERE h.lock_key IS NULL`,
    // One statement renews a whole batch: only rows that are still ours and unexpired match.
    renew: (n: number) =>
      `UPDATE ${t} AS h JOIN (${rows(n)}) AS i ON h.lock_key = i.k AND h.owner = i.o ` +
      `SET h.expires_at = UTC_TIMESTAMP(3) + INTERVAL i.us MICROSECOND WHERE h.expires_at > UTC_TIMESTAMP(3)`,
    alive: (n: number) =>
      `SELECT lock_key, owner FROM ${t} WHERE (lock_key, owner) IN (${Array.from({ length: n }, () => '(?, ?)').join(', ')}) AND expires_at > UTC_TIMESTAMP(3)`,
  };
}

/** The DDL for DBAs who create the tables themselves (createTable: false). */
export function mysqlDdl(table = 'distributed_locks'): string {
  return ddlScript(mysqlStatements(table).ddl);
}
