import type { BackendAttempt, LockMode } from '../../interfaces/lock-backend.interface';
import type { SqlOutcome, SqlPlace, SqlRow, SqlWaiterLine } from './sql-acquire';
import type { SqlAttempt, SqlConnection, SqlStatements } from './sql.dialect';

/** The mode of a waiter's ticket row (fits MySQL's VARCHAR(9); PostgreSQL's check allows it). */
export const QUEUED = 'queued';

/**
 * ms a ticket stays live after the attempt that wrote it: a waiter re-attempts at least every
 * max(fallbackDelay, maxPollDelay) ms, and a margin more.
 */
export function ticketLife(fallbackDelay: number, maxPollDelay: number): number {
  return Math.max(fallbackDelay, maxPollDelay) + 250;
}

/** This process's ticketed waiter of a key: its place at its last look, and what it asks for. */
interface InLine {
  ahead: number;
  /** As bound (the dialect's `key()`). */
  readonly key: unknown;
  readonly owner: string;
  readonly mode: LockMode;
}

/**
 * The SQL backends' fair line: the longest-waiting waiter wins, across processes. In the acquire
 * transaction (sql-acquire.ts), with every row of the key locked:
 * - a live conflicting holder: busy. A waiting request writes (or, past half its life, refreshes)
 *   a TICKET: a row of mode 'queued' under its own owner, dated with its arrival by the server's
 *   clock (kept in fence). A waiting writer so keeps later readers out: no writer starves.
 * - no conflicting holder, but a live ticket older than ours (or any, if we have none): busy too,
 *   so the key goes to the waiter that has waited longest (strict FIFO among waiting requests).
 * - else grant: the holder row replaces our own ticket (same primary key).
 * Tickets are rows of the key, so they are read and locked like holders, under the same mutex.
 * A ticket whose waiter died stops counting once expired (ticketMs after its last attempt); a
 * cancelled or timed-out waiter deletes its ticket (on PostgreSQL the delete NOTIFYs the key, so
 * the next waiter goes at once). Semaphore permits neither take nor honour tickets. Beside the
 * rule, this process's side: which of its waiters hold tickets, and their places at their last look
 * (what MySQL's waiters blocked on a notify lock go by).
 */
export class SqlTickets implements SqlWaiterLine {
  /** `owner:key` of this process's waiters holding a ticket (dropped when they give up). */
  private readonly tickets = new Set<string>();
  /** Per key with a ticketed waiter here: older tickets at its last look. */
  private readonly inLine = new Map<string, InLine>();

  constructor(
    private readonly sql: SqlStatements,
    /** ms a ticket stays live after the attempt that wrote it. */
    private readonly ticketMs: number,
    private readonly withConnection: <T>(work: (conn: SqlConnection) => Promise<T>) => Promise<T>,
    /** This process's waiters of the key may go (a ticket ahead of them was dropped). */
    private readonly wake: (key: string) => void,
  ) {}

  isWaiter(row: SqlRow): boolean {
    return row.mode === (QUEUED as string);
  }

  place(rows: readonly SqlRow[], attempt: SqlAttempt): SqlPlace {
    const live = rows.filter((r) => this.isWaiter(r) && r.leftUs > 0);
    const others = live.filter((r) => r.owner !== attempt.owner);
    const mine = live.find((r) => r.owner === attempt.owner);
    const arrival = mine ? BigInt(String(mine.fence)) : undefined;
    const ahead =
      attempt.permits === undefined
        ? others.filter((t) => arrival === undefined || BigInt(String(t.fence)) < arrival).length
        : 0;
    const soonest = Math.min(...others.map((t) => t.leftUs));
    return {
      ahead,
      retryAfter: Math.max(1, Math.ceil(soonest / 1000)),
      expired: rows.filter((r) => this.isWaiter(r) && r.leftUs <= 0).length,
      mine,
    };
  }

  async keep(conn: SqlConnection, attempt: SqlAttempt, place: SqlPlace): Promise<boolean> {
    if (attempt.permits !== undefined || !attempt.waits) return false;
    const us = this.ticketMs * 1000;
    if (place.mine && place.mine.leftUs > us / 2) {
      await conn.query('ROLLBACK'); // the usual re-attempt: the ticket is fresh, nothing to write
    } else {
      await conn.run(this.sql.ticket, [attempt.key, attempt.owner, us, us]);
      await conn.query('COMMIT');
    }
    return true;
  }

  /** Older live tickets at the last attempt of this process's waiter of `key` (undefined: none). */
  ahead(key: string): number | undefined {
    return this.inLine.get(key)?.ahead;
  }

  /**
   * A waiter behind others learns its place with one lock-free read instead of a whole attempt:
   * true (re-attempt now) once no older live ticket and no conflicting live holder is left. Only a
   * hint: the attempt's transaction alone decides.
   */
  async recheck(key: string): Promise<boolean> {
    const line = this.inLine.get(key);
    const position = this.sql.position;
    if (!line || !position) return true;
    const values = [line.mode, line.key, line.owner, line.key];
    const { rows } = await this.withConnection((conn) => conn.run(position, values));
    const row = (rows as { ahead: unknown; blockers: unknown }[])[0];
    line.ahead = Number(row?.ahead ?? 0);
    return line.ahead === 0 && Number(row?.blockers ?? 0) === 0;
  }

  /** After an attempt: the ticket became the holder row, or the waiter's place is remembered. */
  settled(request: BackendAttempt, key: unknown, outcome: SqlOutcome): void {
    const { key: fullKey, owner, mode } = request;
    const line = `${owner}:${fullKey}`;
    if (outcome.result.acquired) this.tickets.delete(line); // the grant replaced the ticket
    if (!outcome.queued) return void this.inLine.delete(fullKey);
    this.inLine.set(fullKey, { ahead: outcome.ahead ?? 0, key, owner, mode });
    if (this.tickets.has(line)) return;
    this.tickets.add(line);
    // A waiter that gives up (deadline or cancel) takes its ticket back, so the key is not kept for
    // it; if that fails, the ticket lapses ticketMs after its last attempt. It may have given up
    // while this attempt ran: then at once (the signal fires no second 'abort').
    const drop = () => this.drop(line, key, owner, fullKey);
    if (request.signal.aborted) drop();
    else request.signal.addEventListener('abort', drop, { once: true });
  }

  private drop(line: string, key: unknown, owner: string, fullKey: string): void {
    if (!this.tickets.delete(line)) return; // granted meanwhile: the ticket became the holder row
    this.inLine.delete(fullKey);
    this.withConnection((conn) => conn.run(this.sql.dropTicket, [key, owner])).then(
      () => this.wake(fullKey), // this process's next waiter may now be first in line
      // Not lost: the ticket lapses ticketMs after its last attempt, and the key goes on.
      () => undefined,
    );
  }
}
