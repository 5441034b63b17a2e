import type { BackendWaitPolicy, WakeupSource } from '../../interfaces/lock-backend.interface';
import { SqlLockBackend } from '../sql/sql.backend';
import { ticketLife } from '../sql/sql-tickets';
import { postgresDialect } from './postgres.dialect';
import { listenConnector, PgReleaseListener } from './postgres.listener';
import {
  resolvePostgresOptions,
  type PgPoolLike,
  type PostgresLockBackendOptions,
} from './postgres.options';

/**
 * PostgreSQL locks in a table: the shared SQL backend (SqlLockBackend: one row per holder, expiry
 * in the SERVER's clock, clock_timestamp()) over the PostgreSQL dialect (postgres.dialect.ts). The
 * acquire's mutex is a transaction-scoped advisory lock of the key; fences come from a sequence
 * (never reused, monotonic across restarts) taken inside the granting transaction. Across processes
 * the longest-waiting waiter wins (sql-tickets.ts), so a waiting writer is not starved by readers.
 * Release NOTIFYs the key's digest (never the key); waiters sleep on ONE LISTEN connection per
 * backend (the `wakeups`: a dedicated pg Client built from the pool's own settings), bounded by the
 * holder's expiry, and poll while it is down. A lost NOTIFY only delays a waiter (it re-attempts
 * at the fallback pace).
 */
export class PostgresLockBackend extends SqlLockBackend<PgPoolLike> {
  readonly name = 'postgres';
  readonly waitPolicy: BackendWaitPolicy;
  /** The LISTEN connection's wake-ups (undefined with notifications: false: the engine polls). */
  readonly wakeups: WakeupSource | undefined;
  private readonly listener: PgReleaseListener | undefined;

  constructor(options: PostgresLockBackendOptions) {
    const o = resolvePostgresOptions(options);
    const dialect = postgresDialect(o.table);
    // A waiter re-attempts at least once a second while it listens, every maxPollDelay else.
    const fallbackDelay = 1_000;
    super(dialect, o, ticketLife(fallbackDelay, o.maxPollDelay));
    this.waitPolicy = { minDelay: 5, maxDelay: o.maxPollDelay, fallbackDelay };
    if (o.notifications) {
      this.listener = new PgReleaseListener(
        listenConnector(() => this.source.get()),
        dialect.statements.channel,
        this.notifier,
        o.maxPollDelay,
        (key) => this.tickets.ahead(key),
      );
    }
    this.wakeups = this.listener;
  }

  protected override async closeWakeups(): Promise<void> {
    await this.listener?.close();
  }
}
