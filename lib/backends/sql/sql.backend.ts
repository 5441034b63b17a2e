import { checkLockKey, holderData, ReleaseNotifier } from '../../backend-kit';
import type {
  BackendAcquireRequest,
  BackendAcquireResult,
  BackendAttempt,
  BackendLock,
  BackendWaitPolicy,
  LockBackend,
  LockBackendCapabilities,
  LockInspection,
  SemaphoreBackend,
  WakeupSource,
} from '../../interfaces/lock-backend.interface';
import { keyDigest } from './key-digest';
import { acquireInTransaction, type SqlOutcome, type StoredRow } from './sql-acquire';
import type { SqlClientSource } from './sql-client';
import type { SqlConnection, SqlDialect } from './sql.dialect';
import { toInspection, type InspectedRow } from './sql-inspection';
import { createSchema, type SchemaFound } from './sql-schema';
import { SqlSweeper, SWEEP_GRACE_MS } from './sql-sweeper';
import { SqlTickets } from './sql-tickets';
import type { ResolvedSqlOptions } from './sql.options';

/**
 * Locks in a table, one row per holder, expiry in the database SERVER's clock: what MySQL/MariaDB
 * and PostgreSQL share, written once over a dialect (statements, client adapter) and a wake-up
 * source supplied by the subclass.
 *
 * `tryAcquire` is one short READ COMMITTED transaction (sql-acquire.ts): take the key's mutex, lock
 * and read every row of the key, give up if a live holder conflicts (decide()) or an older waiter's
 * ticket is live (sql-tickets.ts: the longest-waiting waiter wins, across processes), else delete
 * expired rows and insert our row with the next fence; COMMIT. Release and forceRelease are single
 * deletes (owner-checked for release) that wake this process's waiters at once; renewal is the
 * dialect's batch (one statement per watchdog tick). Inspection reads without locking. A sweeper
 * deletes rows nobody takes over; the schema is created (or checked for the holder column) once.
 */
export abstract class SqlLockBackend<P> implements LockBackend {
  abstract readonly name: string;
  /**
   * 512 UTF-16 units are at most 1536 UTF-8 bytes: inside InnoDB's 3072-byte index limit (as
   * VARBINARY(2048)) and a PostgreSQL btree entry (about 2700 bytes).
   */
  readonly capabilities: LockBackendCapabilities = {
    shared: true,
    fencing: 'strict',
    sessionBased: false,
    maxKeyLength: 512,
  };
  readonly table: string;
  abstract readonly waitPolicy: BackendWaitPolicy;
  abstract readonly wakeups: WakeupSource | undefined;
  /** This process's releases, by key digest (the wake-up sources feed it too). */
  protected readonly notifier = new ReleaseNotifier();
  protected readonly source: SqlClientSource<P>;
  /** Wake-ups from this process's own releases only (other processes' are found by polling). */
  protected readonly localWakeups: WakeupSource = {
    listen: (key) => this.notifier.listen(keyDigest(key)),
  };
  /** The fair line of waiters: their tickets, rows of the lock table. */
  protected readonly tickets: SqlTickets;
  private readonly dialect: SqlDialect<P>;
  private readonly sweeper: SqlSweeper;
  private readonly createTable: boolean;
  /** The schema check (and creation), once per backend; retried after a failure. */
  private schema: Promise<void> | undefined;
  /** What the schema check found: the holder column (HOLDER_COLUMN), tickets (read once). */
  private found: SchemaFound = { holder: false, tickets: false };

  constructor(
    dialect: SqlDialect<P>,
    options: ResolvedSqlOptions & { readonly source: SqlClientSource<P> },
    /** ms a ticket stays live after the attempt that wrote it (ticketLife). */
    ticketMs: number,
  ) {
    this.dialect = dialect;
    this.source = options.source;
    this.table = options.table;
    this.createTable = options.createTable;
    this.sweeper = new SqlSweeper(options.sweepInterval, () =>
      this.withConnection((conn) => dialect.sweep(conn, SWEEP_GRACE_MS)),
    );
    this.tickets = new SqlTickets(
      dialect.statements,
      ticketMs,
      (work) => this.withConnection(work),
      (key) => this.notifier.notify(keyDigest(key)), // our next waiter may now be first in line
    );
  }

  /**
   * One try: a short transaction that grants the lock or reports how long the blockers have left.
   */
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.tryRow(request, undefined);
  }

  /** Native semaphores: permit rows of the key, renewed and released as lock rows. */
  readonly semaphore: SemaphoreBackend = {
    tryAcquire: (request, permits) => this.tryRow(request, permits),
    renew: (permits) => this.renew(permits),
    release: (permit) => this.release(permit),
  };

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    if (locks.length === 0) return [];
    const answers = await this.withConnection((conn) => this.dialect.renew(conn, locks));
    locks.forEach((lock, i) => answers[i] || this.forget(lock));
    return answers;
  }

  async release(lock: BackendLock): Promise<void> {
    const { statements: s } = this.dialect;
    const key = this.dialect.key(lock.key);
    const released = await this.withConnection(async (conn) => {
      // No READ COMMITTED first (one round trip less on the handoff's path): an autocommit DELETE
      // by the whole primary key locks that one row (or, if it is gone, a gap for this statement
      // only).
      const { affected } = await conn.run(s.release, [key, lock.owner]);
      // Let go of the key's wake-up before dropKey: dropKey waits for the mutex row, which the next
      // holder's acquire may hold while it waits for us to let go (a cycle no server would see).
      this.forget(lock);
      if (affected === 0) return false;
      await this.dropKey(conn, key);
      return true;
    }).finally(() => this.forget(lock));
    // Our own waiters need not wait for another process's wake-up (or for one that is down).
    if (released) this.notifier.notify(keyDigest(lock.key));
  }

  /**
   * Holders (owner, mode, ttl left by the server's clock) and the key's last fence, read without
   * locking.
   */
  async inspect(key: string): Promise<LockInspection> {
    const { statements: s } = this.dialect;
    const { rows } = await this.withConnection((conn) =>
      conn.run(this.found.holder ? s.inspect : s.inspectBare, [this.dialect.key(key)]),
    );
    const read = rows.map((r: StoredRow<InspectedRow>) => ({
      ...r,
      leftUs: Number(r.left_us ?? 0),
    }));
    return toInspection(key, read, this.name, this.found.tickets);
  }

  /**
   * Deletes every holder row of `key`, whoever owns it (waiters keep their tickets). The old holder
   * learns at its next renewal (its handle's signal aborts); the next grant's fence is larger.
   * Other processes' waiters wake by their wake-up source (PostgreSQL: the NOTIFY; MySQL: when the
   * old holder's renewal fails and lets its notify lock go), else at their fallback re-attempt.
   */
  async forceRelease(key: string): Promise<boolean> {
    const { statements: s } = this.dialect;
    const bound = this.dialect.key(key);
    const removed = await this.withConnection(async (conn) => {
      if (s.readCommitted) await conn.query(s.readCommitted);
      const { affected } = await conn.run(s.forceRelease, [bound]);
      await this.dropKey(conn, bound);
      return affected > 0;
    });
    if (removed) this.notifier.notify(keyDigest(key));
    return removed;
  }

  /** Held keys under `prefix`, at most `limit`: one range scan of the key index. */
  list(prefix: string, limit: number): Promise<string[]> {
    return this.withConnection((conn) =>
      this.dialect.list(conn, prefix, Math.max(0, Math.floor(limit))),
    );
  }

  async close(): Promise<void> {
    this.sweeper.stop();
    await this.closeWakeups();
    this.notifier.notifyAll();
    await this.source.close();
  }

  /** Stops the wake-up source (its connections) before the pool is ended. */
  protected abstract closeWakeups(): Promise<void>;

  /** Called before an attempt takes its connection (MySQL: the notify locks' connection first). */
  protected beforeAttempt(): Promise<void> {
    return Promise.resolve();
  }

  /** The attempt's transaction ended (granted or busy): the subclass's bookkeeping. */
  protected settled(_request: BackendAttempt, _permits: number | undefined, _o: SqlOutcome): void {}

  /** `lock` is not (or no longer) held by this process: let go of whatever it armed. */
  protected forget(_lock: BackendLock): void {}

  /** The pool: the one given, or the factory's (made on first use). */
  protected pool(): Promise<P> {
    return this.source.get();
  }

  /**
   * Runs `work` on one pooled connection, returned right after (never kept across a wait). A
   * connection whose statement failed is destroyed, not pooled: it may sit in an open transaction
   * or be half-dead after a server restart.
   */
  protected async withConnection<T>(work: (conn: SqlConnection) => Promise<T>): Promise<T> {
    this.schema ??= this.checkout(async (conn) => {
      this.found = await createSchema(conn, this.dialect, this.createTable);
    }).catch((error: unknown) => {
      this.schema = undefined; // e.g. the server was down: retried on the next call
      throw error;
    });
    await this.schema;
    return this.checkout(work);
  }

  private async checkout<T>(work: (conn: SqlConnection) => Promise<T>): Promise<T> {
    const conn = await this.dialect.connect(await this.pool());
    try {
      const result = await work(conn);
      conn.release();
      return result;
    } catch (error) {
      conn.destroy();
      throw error;
    }
  }

  private async tryRow(request: BackendAttempt, permits: number | undefined) {
    // Also for callers that reach the backend without the engine: length, control characters, and
    // lone surrogates (no UTF-8 form: '\uD800' and '\uD801' would both be sent as U+FFFD).
    checkLockKey(request.key, this.capabilities.maxKeyLength);
    this.sweeper.start();
    await this.beforeAttempt();
    const { owner, mode, ttl } = request;
    // The engine's waits pass the whole BackendAcquireRequest: only a request that waits queues.
    const waits = ((request as Partial<BackendAcquireRequest>).wait ?? 0) > 0;
    const attempt = { key: this.dialect.key(request.key), owner, mode, ttl, permits, waits };
    const outcome = await this.withConnection((conn) => {
      // Read after the schema check (withConnection): the holder column, and tickets.
      const holder = this.found.holder ? holderData(request.holder) : undefined;
      const line = this.found.tickets ? this.tickets : undefined;
      return acquireInTransaction(conn, this.dialect, attempt, holder, line);
    });
    this.tickets.settled(request, attempt.key, outcome);
    this.settled(request, permits, outcome);
    return outcome.result;
  }

  /** MySQL: drops the key's mutex row once the key has no rows left (READ COMMITTED). */
  private async dropKey(conn: SqlConnection, key: unknown): Promise<void> {
    const { statements: s } = this.dialect;
    if (!s.dropKey) return;
    if (s.readCommitted) await conn.query(s.readCommitted);
    await conn.run(s.dropKey, [key, key]);
  }
}
