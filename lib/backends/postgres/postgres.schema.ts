import { KEY_DIGEST_HEX } from '../sql/key-digest';
import { ddlScript, HOLDER_COLUMN } from '../sql/sql-schema';
import { SWEEP_BATCH } from '../sql/sql-sweeper';
import { QUEUED } from '../sql/sql-tickets';

/**
 * Table and statements of the PostgreSQL backend. Only the table name (a validated plain
 * identifier, see checkTableName) is spliced into SQL; every value is a $n parameter. Times are
 * timestamptz from the server's clock_timestamp(), never the application's clock.
 *
 * <table>        one row per holder: an exclusive holder, one of several shared holders, or one
 *                permit of a semaphore (mode 'semaphore'). Also a waiter's TICKET (mode 'queued'):
 *                expires_at is when it lapses, fence holds its arrival (µs since 1970 by the
 *                server's clock); see sql-tickets.ts.
 * <table>_fence  a sequence: fencing tokens, monotonic across restarts (never reused).
 * Per-key mutex: pg_advisory_xact_lock(<table's class id>, hashtext(key)), held until the acquire's
 * COMMIT; two keys that collide in the 32-bit hash only queue behind each other, never share a
 * lock.
 */
export type PostgresStatements = ReturnType<typeof postgresStatements>;

export function postgresStatements(table: string) {
  const t = `"${table}"`;
  const seq = `"${table}_fence"`;
  const channel = `${table}_released`;
  // The payload is the key's digest (keyDigest: SHA-256 of its UTF-8 bytes, first 32 hex digits),
  // never the key. The channel derives from the validated table name: safe as a literal.
  const notify = `pg_notify('${channel}', left(encode(sha256(convert_to(lock_key, 'UTF8')), 'hex'), ${KEY_DIGEST_HEX}))`;
  return {
    ddl: ddl(table),
    channel,
    // One round trip (simple protocol, no values). The timeouts bound the harm of a client that
    // freezes inside its few-ms transaction while holding a key's mutex: the server ends its
    // session after 5 s idle, and nobody waits more than 5 s for a mutex (the attempt fails and is
    // retried within the caller's budget).
    begin:
      "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = '5s'; SET LOCAL idle_in_transaction_session_timeout = '5s'",
    mutex: 'SELECT pg_advisory_xact_lock($1::int4, hashtext($2::text))',
    // Locks every row of the key, holders and tickets, in (lock_key, owner) order, the order renew
    // locks in too; reads each one's time left (and a ticket's arrival, in fence).
    holders:
      `SELECT owner, mode, (extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint AS left_us, ` +
      `fence::text AS fence FROM ${t} WHERE lock_key = $1 ORDER BY owner FOR UPDATE`,
    // Takes over expired rows of the key (a dead holder's) and inserts ours, with its holder data
    // ($5) when the table has the column (grantBare: without), in one statement. A waiter's grant
    // replaces its own ticket (same primary key; the purge leaves that row to it): an upsert, kept
    // off the uncontended path (there ON CONFLICT cost about 5 % of a cycle).
    grant: grant(t, seq, true, false),
    grantBare: grant(t, seq, false, false),
    grantTicket: grant(t, seq, true, true),
    grantTicketBare: grant(t, seq, false, true),
    hasHolder: `SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = '${HOLDER_COLUMN}' AND NOT attisdropped`,
    // A table a DBA made with the mode check of an older version (createTable: false) refuses
    // tickets: the backend then keeps no line (any waiter may take a free key) until it is
    // replaced.
    refusesTickets:
      `SELECT 1 FROM pg_constraint WHERE conrelid = to_regclass($1) AND contype = 'c' ` +
      `AND pg_get_constraintdef(oid) LIKE '%exclusive%' AND pg_get_constraintdef(oid) NOT LIKE '%${QUEUED}%'`,
    // A waiter's ticket: dated with its arrival once, later attempts only extend it (never a holder
    // row).
    ticket:
      `INSERT INTO ${t} AS h (lock_key, owner, mode, expires_at, fence) VALUES ($1, $2, '${QUEUED}', ` +
      `clock_timestamp() + $3::bigint * interval '1 microsecond', (extract(epoch FROM clock_timestamp()) * 1000000)::bigint) ` +
      `ON CONFLICT (lock_key, owner) DO UPDATE SET expires_at = CASE WHEN h.mode = '${QUEUED}' ` +
      `THEN clock_timestamp() + $4::bigint * interval '1 microsecond' ELSE h.expires_at END`,
    // A waiter that gave up: NOTIFY, so the waiters behind it need not wait for its ticket to
    // lapse.
    dropTicket:
      `WITH gone AS (DELETE FROM ${t} WHERE lock_key = $1 AND owner = $2 AND mode = '${QUEUED}' RETURNING lock_key) ` +
      `SELECT ${notify} FROM gone`,
    // One statement renews a whole batch; rows are locked in key order so two batches and an
    // acquire can never deadlock; only rows that are still ours and unexpired are extended.
    renew:
      `WITH i AS (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[]) AS i(k, o, ms)), ` +
      `mine AS (SELECT h.lock_key, h.owner, i.ms FROM ${t} h JOIN i ON h.lock_key = i.k AND h.owner = i.o ` +
      `ORDER BY h.lock_key, h.owner FOR UPDATE OF h) ` +
      `UPDATE ${t} h SET expires_at = clock_timestamp() + mine.ms * interval '1 millisecond' FROM mine ` +
      `WHERE h.lock_key = mine.lock_key AND h.owner = mine.owner AND h.expires_at > clock_timestamp() RETURNING h.lock_key, h.owner`,
    // Owner-checked delete; NOTIFY (delivered at commit) only when a row was ours.
    release:
      `WITH gone AS (DELETE FROM ${t} WHERE lock_key = $1 AND owner = $2 RETURNING lock_key) ` +
      `SELECT ${notify} FROM gone`,
    // Operators: a plain read (no locks) of the key's rows (holders, and the tickets counted as
    // waiters), and the holders' delete whatever the owner (NOTIFY as release; waiters keep their
    // tickets, so their places in line).
    inspect: inspect(t, true),
    inspectBare: inspect(t, false),
    forceRelease:
      `WITH gone AS (DELETE FROM ${t} WHERE lock_key = $1 AND mode <> '${QUEUED}' RETURNING lock_key) ` +
      `SELECT ${notify} FROM gone`,
    // Held keys in [$1, $2) by code point ($2 NULL: no upper bound), at most $3: a range of the
    // COLLATE "C" index, whatever the column's collation.
    list:
      `SELECT DISTINCT lock_key COLLATE "C" AS lock_key FROM ${t} WHERE lock_key COLLATE "C" >= $1 ` +
      `AND ($2::text IS NULL OR lock_key COLLATE "C" < $2) AND expires_at > clock_timestamp() ` +
      `AND mode <> '${QUEUED}' ORDER BY 1 LIMIT $3`,
    // Sweeper (see sql-sweeper.ts): a bounded batch of rows expired for over a minute; the outer
    // condition is re-checked on the current row version if a renewal or an acquire got there
    // first.
    sweep:
      `DELETE FROM ${t} WHERE expires_at < clock_timestamp() - $1::bigint * interval '1 millisecond' AND ctid IN ` +
      `(SELECT ctid FROM ${t} WHERE expires_at < clock_timestamp() - $1::bigint * interval '1 millisecond' LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)`,
  };
}

/** The table, its sequence and index, and the upgrades of older tables, in order. */
function ddl(table: string): string[] {
  const t = `"${table}"`;
  const seq = `"${table}_fence"`;
  return [
    `CREATE TABLE IF NOT EXISTS ${t} (
  lock_key   text        NOT NULL,  -- full lock key (exact, byte-wise equality)
  owner      text        NOT NULL,  -- 128-bit owner token, hex
  mode       text        NOT NULL CHECK (mode IN ('exclusive', 'shared', 'semaphore', '${QUEUED}')),
  expires_at timestamptz NOT NULL,  -- database server clock
  fence      bigint      NOT NULL,  -- fencing token of this grant
  holder     text,                  -- the holder: {"host","pid","instance"} (JSON text)
  PRIMARY KEY (lock_key, owner)
)`,
    `CREATE SEQUENCE IF NOT EXISTS ${seq} AS bigint`,
    // Upgrade of a table made before semaphores or waiters' tickets (its CHECK allowed fewer
    // modes): replaces the check once; a table that already allows tickets is left untouched (no
    // ALTER, so no ACCESS EXCLUSIVE lock on later start-ups).
    `DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = '${t}'::regclass AND conname = '${table}_mode_check'
             AND pg_get_constraintdef(oid) NOT LIKE '%${QUEUED}%') THEN
    ALTER TABLE ${t} DROP CONSTRAINT "${table}_mode_check",
      ADD CONSTRAINT "${table}_mode_check" CHECK (mode IN ('exclusive', 'shared', 'semaphore', '${QUEUED}'));
  END IF;
END $$`,
    // Upgrade of a table made before holder identities: adds the column once (a table that has
    // it gets no ALTER, so no ACCESS EXCLUSIVE lock on later start-ups).
    `DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '${t}'::regclass AND attname = '${HOLDER_COLUMN}'
                 AND NOT attisdropped) THEN
    ALTER TABLE ${t} ADD COLUMN ${HOLDER_COLUMN} text;
  END IF;
END $$`,
    // list(prefix): a byte-wise (code point) range, whatever the database's collation.
    `CREATE INDEX IF NOT EXISTS "${table}_key_c" ON ${t} (lock_key COLLATE "C")`,
  ];
}

function grant(t: string, seq: string, holder: boolean, ticket: boolean): string {
  const h = holder ? `, ${HOLDER_COLUMN}` : '';
  const upsert =
    `ON CONFLICT (lock_key, owner) DO UPDATE SET mode = EXCLUDED.mode, expires_at = EXCLUDED.expires_at, ` +
    `fence = EXCLUDED.fence${holder ? `${h} = EXCLUDED.${HOLDER_COLUMN}` : ''} `;
  return (
    `WITH purged AS (DELETE FROM ${t} WHERE lock_key = $1 ${ticket ? 'AND owner <> $2 ' : ''}AND expires_at <= clock_timestamp()) ` +
    `INSERT INTO ${t} (lock_key, owner, mode, expires_at, fence${h}) ` +
    `VALUES ($1, $2, $3, clock_timestamp() + $4::bigint * interval '1 millisecond', nextval('${seq}')` +
    `${holder ? ', $5' : ''}) ${ticket ? upsert : ''}RETURNING fence::text AS fence`
  );
}

function inspect(t: string, holder: boolean): string {
  return (
    `SELECT owner, mode, (extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint AS left_us, ` +
    `fence::text AS fence${holder ? `, ${HOLDER_COLUMN}` : ''} FROM ${t} WHERE lock_key = $1`
  );
}

/** The DDL for DBAs who create the table themselves (createTable: false). */
export function postgresDdl(table = 'distributed_locks'): string {
  return ddlScript(postgresStatements(table).ddl);
}

/**
 * A 32-bit class id for the table's advisory locks (FNV-1a of its name), so two tables never share
 * mutexes.
 */
export function advisoryClass(table: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(`nestjs-distributed-lock:${table}`, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193);
  }
  return h | 0;
}
