import type { BackendWaitPolicy, WakeupSource } from '../../interfaces/lock-backend.interface';
import { SqlLockBackend } from '../sql/sql.backend';
import { postgresDialect } from './postgres.dialect';
import { listenConnector, PgReleaseListener } from './postgres.listener';
import {
  resolvePostgresOptions,
  type PgPoolLike,
  type PostgresLockBackendOptions,
} from './postgres.options';

/**
 * PostgreSQL locks in a table: one row per holder, expiry in the SERVER's clock
 * (clock_timestamp()), never the application's. The shared SQL backend (SqlLockBackend) over the
 * PostgreSQL dialect (postgres.dialect.ts).
 *
 * Algorithm: `tryAcquire` is one short READ COMMITTED transaction: take the key's
 * transaction-scoped advisory lock (the per-key mutex), lock and read every holder row of the key,
 * give up if a live holder conflicts, else delete expired holders (a dead process's lock is taken
 * over here) and insert our row with nextval() of the fence sequence; COMMIT. Release is an
 * owner-checked DELETE that NOTIFYs the key's digest (never the key); the engine's waiters sleep on
 * ONE LISTEN connection per backend (the `wakeups`: a dedicated pg Client built from the pool's own
 * settings), bounded by the holder's expiry, and poll while it is down. Renew is ONE statement for
 * a whole batch.
 *
 * Safety: under the mutex with the holder rows locked, no two conflicting grants can commit, and a
 * renewal racing with a takeover either lands first (the holder is live: busy) or finds its row
 * gone. Fences come from a sequence (never reused, monotonic across restarts) taken inside the
 * granting transaction. A lost NOTIFY only delays a waiter (it re-attempts at the fallback pace).
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
    super({ dialect, options: o, source: o.source });
    this.waitPolicy = { minDelay: 5, maxDelay: o.maxPollDelay };
    if (o.notifications) {
      this.listener = new PgReleaseListener(
        listenConnector(() => this.source.get()),
        dialect.statements.channel,
        this.notifier,
        o.maxPollDelay,
      );
    }
    this.wakeups = this.listener;
  }

  protected override async closeWakeups(): Promise<void> {
    await this.listener?.close();
  }
}
