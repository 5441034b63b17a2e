import type { BackendAcquireResult } from '../../interfaces/lock-backend.interface';
import type { SqlAttempt, SqlConnection, SqlDialect } from './sql.dialect';
import { decide, storedMode, type HolderRow } from './sql-lock.rules';

/** A row of the key as the acquire reads it (locked): a holder's, or a waiter's (see line). */
export interface SqlRow extends HolderRow {
  /** The grant's fence; a waiter's row may keep its arrival here. */
  readonly fence?: unknown;
}

/** A row as the driver gives it: µs left as a number or a numeric string (left_us). */
export type StoredRow<R> = Omit<R, 'leftUs'> & { readonly left_us: unknown };

/** A request's place among the key's waiters, as the transaction sees it. */
export interface SqlPlace {
  /** Live waiters before this request (0: it is first, or nobody waits). */
  readonly ahead: number;
  /** ms until the first of them lapses (if its waiter is gone, the key is free then). */
  readonly retryAfter: number;
  /** Expired waiter rows (purged with the holders' on a grant). */
  readonly expired: number;
  /** The request's own live waiter row, if any. */
  readonly mine: SqlRow | undefined;
}

/**
 * A fair line of waiting requests kept as rows of the lock table (tickets): a grant goes
 * to the longest-waiting request. Optional; without it any request may take a free key.
 */
export interface SqlWaiterLine {
  /** A waiter's row, not a holder's (the rule ignores it). */
  isWaiter(row: SqlRow): boolean;
  place(rows: readonly SqlRow[], attempt: SqlAttempt): SqlPlace;
  /**
   * Busy: keeps the request's place (writes or refreshes its row, then ends the transaction) and
   * returns true, or returns false (a request that does not queue) and leaves the transaction open.
   */
  keep(conn: SqlConnection, attempt: SqlAttempt, place: SqlPlace): Promise<boolean>;
}

/** The transaction's answer: the result, and for a busy request its place in the line. */
export interface SqlOutcome {
  readonly result: BackendAcquireResult;
  /** Busy and queued: live waiters ahead at this attempt. */
  readonly ahead?: number;
  /** Busy: the request holds a place in the line after this attempt. */
  readonly queued: boolean;
}

/**
 * One acquire attempt, in one READ COMMITTED transaction: take the key's mutex, lock and read every
 * row of the key, then decide (decide(), plus the waiter line's place if the dialect keeps one):
 * - a live conflicting holder, or an older live waiter: busy (ROLLBACK, or the line keeps our
 *   place), with how long the blockers have left;
 * - else grant: purge expired rows, insert our row with the next fence, COMMIT.
 * Under the mutex with the key's rows locked, no two conflicting grants can commit, and a renewal
 * racing with a takeover either lands first (the holder is live: busy) or finds its row gone.
 * A failure anywhere destroys the connection (the caller's checkout), which rolls back.
 */
export async function acquireInTransaction<P>(
  conn: SqlConnection,
  dialect: SqlDialect<P>,
  attempt: SqlAttempt,
  holder: string | undefined,
  line: SqlWaiterLine | undefined,
): Promise<SqlOutcome> {
  const s = dialect.statements;
  if (s.readCommitted) await conn.query(s.readCommitted);
  await conn.query(s.begin);
  await conn.run(s.mutex, dialect.mutexValues(attempt.key));
  // A new statement after the mutex: its snapshot sees every grant committed before we got it.
  const read = await conn.run(s.holders, [attempt.key]);
  const rows = read.rows.map((r: StoredRow<SqlRow>): SqlRow => ({
    ...r,
    leftUs: Number(r.left_us ?? 0),
  }));
  const place = line?.place(rows, attempt);
  const holders = line ? rows.filter((r) => !line.isWaiter(r)) : rows;
  const decision = decide(holders, attempt.mode, attempt.permits);
  if (decision.blocked || (place !== undefined && place.ahead > 0)) {
    // Busy behind a holder (its time left) or an older waiter (the first one's).
    const retryAfter = decision.blocked ? decision.retryAfter : place!.retryAfter;
    const result = { acquired: false as const, retryAfter };
    if (line && place && (await line.keep(conn, attempt, place)))
      return { result, ahead: place.ahead, queued: true };
    await conn.query('ROLLBACK');
    return { result, queued: false };
  }
  const stored = storedMode(attempt.mode, attempt.permits);
  const purge = decision.expired + (place?.expired ?? 0) > 0;
  const ticket = rows.some((r) => line?.isWaiter(r) && r.owner === attempt.owner);
  const grant = { ...attempt, stored, holder, purge, ticket };
  const { fencingToken, sentAt } = await dialect.grant(conn, grant);
  await conn.query('COMMIT');
  return { result: { acquired: true, fencingToken, sentAt }, queued: false };
}
