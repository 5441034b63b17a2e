import { toBigInt } from '../../backend-kit';
import type { BackendAcquireResult, LockMode } from '../../interfaces/lock-backend.interface';
import { decide, storedMode, type HolderRow, type StoredMode } from '../sql/sql-lock.rules';
import type { MySqlConnectionLike } from './mysql.options';
import { QUEUED, type MySqlStatements } from './mysql.schema';

/** One acquire attempt as the transaction sees it. */
export interface MySqlAttemptRequest {
  readonly key: Buffer;
  readonly owner: string;
  readonly mode: LockMode;
  readonly ttl: number;
  readonly permits: number | undefined;
  /** The request waits (the engine will re-attempt): on busy it takes or keeps a ticket. */
  readonly waits: boolean;
  /** ms a ticket stays live after the attempt that wrote it. */
  readonly ticketMs: number;
  /** The holder's data to store, or undefined when the table has no holder column. */
  readonly holder: string | undefined;
}

export interface MySqlAttemptOutcome {
  readonly result: BackendAcquireResult;
  /** Busy only: live tickets older than ours (0: we are first in line); undefined for seats. */
  readonly ahead?: number;
  /** Busy only: we hold a live ticket for the key after this attempt. */
  readonly ticketed: boolean;
}

interface Row {
  owner: string;
  mode: StoredMode | typeof QUEUED;
  left_us: number | string | null;
  fence: unknown;
}

/**
 * The acquire transaction (the longest-waiting waiter wins). READ COMMITTED: X-lock the
 * key's mutex row, lock and read every row of the key, then decide:
 * - a live conflicting holder: busy. A waiting request writes (or, past half its life, refreshes) a
 * TICKET: a row of mode 'queued' under its own owner, dated with its arrival by the server's clock.
 * - no conflicting holder, but a live ticket older than ours (or any, if we have none): busy too,
 *   so the key goes to the waiter that has waited longest (strict FIFO among waiting requests).
 * - else grant: purge expired rows, take the next fence, insert our holder row (which replaces our
 *   own ticket, same primary key), COMMIT.
 * Tickets are rows of the key, so they are read and locked like holders, under the same mutex.
 * A ticket whose waiter died stops counting once expired (ticketMs after its last attempt); a
 * cancelled or timed-out waiter deletes its ticket. Semaphore seats neither take nor honour
 * tickets.
 */
export async function attemptAcquire(
  conn: MySqlConnectionLike,
  sql: MySqlStatements,
  req: MySqlAttemptRequest,
  backend: string,
): Promise<MySqlAttemptOutcome> {
  const { key, owner, mode, ttl, permits } = req;
  await conn.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
  // A failure anywhere below destroys the connection (withConnection), which rolls the transaction
  // back.
  await conn.query('START TRANSACTION');
  await conn.execute(sql.lockKey, [key]);
  const [read] = await conn.execute(sql.holders, [key]);
  const rows = (read as Row[]).map((r) => ({ ...r, leftUs: Number(r.left_us ?? 0) }));
  const holders: HolderRow[] = rows.filter((r) => r.mode !== QUEUED) as HolderRow[];
  const tickets = rows.filter((r) => r.mode === QUEUED && r.leftUs > 0 && r.owner !== owner);
  const mine = rows.find((r) => r.mode === QUEUED && r.leftUs > 0 && r.owner === owner);
  const expiredTickets = rows.filter((r) => r.mode === QUEUED && r.leftUs <= 0).length;
  const decision = decide(holders, mode, permits);
  const lines = permits === undefined;
  const arrival = mine ? BigInt(String(mine.fence)) : undefined;
  const ahead = lines
    ? tickets.filter((t) => arrival === undefined || BigInt(String(t.fence)) < arrival).length
    : 0;
  if (decision.blocked || ahead > 0) {
    // Busy behind a holder or an older ticket. retryAfter: the holders' time left, else the
    // oldest ticket's (if its waiter is gone, the key is free when it expires).
    const retryAfter = decision.blocked
      ? decision.retryAfter
      : Math.max(1, Math.ceil(Math.min(...tickets.map((t) => t.leftUs)) / 1000));
    if (!lines || !req.waits) {
      await conn.query('ROLLBACK');
      return { result: { acquired: false, retryAfter }, ticketed: false };
    }
    if (mine && mine.leftUs > (req.ticketMs * 1000) / 2) {
      await conn.query('ROLLBACK'); // the usual re-attempt: the ticket is fresh, nothing to write
    } else {
      const us = req.ticketMs * 1000;
      await conn.execute(sql.ticket, [key, owner, us, us]);
      await conn.query('COMMIT');
    }
    return { result: { acquired: false, retryAfter }, ahead, ticketed: true };
  }
  if (decision.expired + expiredTickets > 0) await conn.execute(sql.purge, [key]);
  const [fence] = await conn.execute(sql.nextFence, []);
  const fencingToken = toBigInt((fence as { insertId: unknown }).insertId, backend);
  // The row's expiry is dated by the server when this statement runs: date our validity from just
  // before sending it, never from before the waits for a pooled connection or the key's mutex row.
  const sentAt = performance.now();
  const stored = storedMode(mode, permits);
  const token = fencingToken.toString();
  const row = [key, owner, stored, ttl * 1000, token];
  const update = [stored, ttl * 1000, token];
  if (req.holder === undefined) await conn.execute(sql.insertBare, [...row, ...update]);
  else await conn.execute(sql.insert, [...row, req.holder, ...update, req.holder]);
  await conn.query('COMMIT');
  return { result: { acquired: true, fencingToken, sentAt }, ticketed: false };
}

/** This process's ticketed waiter of a key: its place at its last look, and what it asks for. */
export interface InLine {
  ahead: number;
  readonly key: Buffer;
  readonly owner: string;
  readonly mode: LockMode;
}

/**
 * A waiter behind others learns its place with one lock-free read instead of a whole attempt
 * (MySqlDoorbell): true (re-attempt now) once no older live ticket and no conflicting live holder
 * is left. Only a hint: the attempt's transaction alone decides.
 */
export async function readPlace(
  conn: MySqlConnectionLike,
  sql: MySqlStatements,
  line: InLine,
): Promise<boolean> {
  const [rows] = await conn.execute(sql.position, [line.mode, line.key, line.owner, line.key]);
  const row = (rows as { ahead: unknown; blockers: unknown }[])[0];
  line.ahead = Number(row?.ahead ?? 0);
  return line.ahead === 0 && Number(row?.blockers ?? 0) === 0;
}
