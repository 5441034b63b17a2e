import type {
  BackendAttempt,
  BackendLock,
  BackendWaitPolicy,
  WakeupSource,
} from '../../interfaces/lock-backend.interface';
import type { SqlOutcome } from '../sql/sql-acquire';
import { SqlLockBackend } from '../sql/sql.backend';
import { ticketLife } from '../sql/sql-tickets';
import { MySqlReleaseNotify } from './mysql.release-notify';
import { mysqlDialect } from './mysql.dialect';
import {
  defaultBlockingWaiters,
  resolveMySqlOptions,
  type MySqlLockBackendOptions,
  type MySqlPoolLike,
} from './mysql.options';

/**
 * MySQL 8 / MariaDB 10.11 locks in a table: the shared SQL backend (SqlLockBackend: one row per
 * holder, expiry in the SERVER's clock, UTC_TIMESTAMP(3)) over the MySQL dialect (mysql.dialect).
 * The acquire's mutex is the key's row in <table>_keys, X-locked until COMMIT; fences come from one
 * counter row locked until COMMIT, so they grow strictly. Across processes the longest-waiting
 * waiter wins: a waiting request that finds the key busy leaves a ticket row, and a grant goes only
 * to the holder of the oldest live ticket (sql-tickets.ts). This process's releases wake its own
 * waiters at once; other processes' waiters block on the key's GET_LOCK notify lock
 * (MySqlReleaseNotify) and poll only where they must. No connection is held between attempts.
 */
export class MySqlLockBackend extends SqlLockBackend<MySqlPoolLike> {
  readonly name = 'mysql';
  readonly waitPolicy: BackendWaitPolicy;
  /**
   * This process's releases (in-process) and other processes' (GET_LOCK notify locks, else
   * polling).
   */
  readonly wakeups: WakeupSource;
  private readonly blockingWaiters: number | undefined;
  private readonly releaseNotify: MySqlReleaseNotify;

  constructor(options: MySqlLockBackendOptions) {
    const o = resolveMySqlOptions(options);
    const given = o.source.given;
    const blocking = o.blockingWaiters ?? (given ? defaultBlockingWaiters(given) : 0);
    // Without notify locks the notifier only hears this process's releases: poll the others at the
    // backoff pace. (A factory's pool is sized on first use; until then, and with 0 blocking
    // waiters, every waiter polls.)
    const notifies = o.blockingWaiters !== 0 && (blocking > 0 || !given);
    const fallbackDelay = notifies ? 1_000 : o.maxPollDelay;
    super(mysqlDialect(o.table), o, ticketLife(fallbackDelay, o.maxPollDelay));
    this.blockingWaiters = o.blockingWaiters;
    this.releaseNotify = new MySqlReleaseNotify({
      pool: () => this.pool(),
      table: o.table,
      blockingWaiters: blocking,
      maxPollDelay: o.maxPollDelay,
      notifier: this.notifier,
      place: (key) => this.tickets.ahead(key),
      recheck: (key) => this.tickets.recheck(key),
    });
    this.wakeups = notifies ? this.releaseNotify : this.localWakeups;
    this.waitPolicy = { minDelay: 5, maxDelay: o.maxPollDelay, fallbackDelay };
  }

  /**
   * Checks the release notify's holder connection out BEFORE an acquire takes its own: an arm that
   * waited for a pooled connection while the acquires held them all would stall every acquire.
   */
  protected override beforeAttempt(): Promise<void> {
    return this.releaseNotify.ready();
  }

  protected override settled(request: BackendAttempt, permits: number | undefined, o: SqlOutcome) {
    // Armed after COMMIT, not awaited: arming may wait for woken waiters to let go of the
    // notify lock, and must not hold the key's mutex meanwhile. A waiter that sees our row first
    // polls briefly. Semaphore permits are not armed: one process's notify lock could not tell the
    // waiters of the other permit holders' releases, so their waiters poll (the 'unarmed' backoff)
    // instead.
    if (o.result.acquired && permits === undefined)
      void this.releaseNotify.arm(request.key, request.owner, request.mode === 'exclusive');
  }

  /** RELEASE_LOCK of the notify lock after the DELETE commits: a woken waiter finds no row. */
  protected override forget(lock: BackendLock): void {
    this.releaseNotify.disarm(lock.key, lock.owner);
  }

  protected override closeWakeups(): Promise<void> {
    return this.releaseNotify.close();
  }

  /** The pool: the one given, or the factory's (its size sets the default blockingWaiters). */
  protected override async pool(): Promise<MySqlPoolLike> {
    const pool = await this.source.get();
    if (this.blockingWaiters === undefined && this.source.given === undefined)
      this.releaseNotify.blockingWaiters = defaultBlockingWaiters(pool);
    return pool;
  }
}
