import { holderData, ReleaseNotifier } from '../../backend-kit';
import { attemptAcquire, readPlace, type InLine } from './mysql.acquire';
import { affected, renewLocks } from './mysql.renew';
import { MySqlDoorbell } from './mysql.doorbell';
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
import { checkSqlKey, type StoredMode } from '../sql/sql-lock.rules';
import { keyRange } from '../sql/sql-listing';
import { SqlClientSource } from '../sql/sql-client';
import { toInspection } from '../sql/sql-inspection';
import { SchemaOnce } from '../sql/sql-schema';
import { SqlSweeper, SWEEP_GRACE_MS } from '../sql/sql-sweeper';
import {
  defaultDoorbells,
  resolveMySqlOptions,
  type MySqlConnectionLike,
  type MySqlLockBackendOptions,
  type MySqlPoolLike,
} from './mysql.options';
import { mysqlStatements, type MySqlStatements } from './mysql.schema';

/**
 * A live waiter re-attempts at least every max(fallbackDelay, maxPollDelay) ms; its ticket this
 * much longer.
 */
const TICKET_MARGIN_MS = 250;

/**
 * MySQL 8 / MariaDB 10.11 locks in a table: one row per holder, expiry in the SERVER's clock
 * (UTC_TIMESTAMP(3)), never the application's.
 *
 * Algorithm: `tryAcquire` is one short READ COMMITTED transaction: X-lock the key's mutex row
 * (<table>_keys), lock and read every holder row of the key, give up if a live holder conflicts,
 * else delete expired holders (a dead process's lock is taken over here), take the next fence from
 * the counter row and insert our row; COMMIT. Release and renew are owner-checked single
 * statements (renew: ONE statement for a whole batch). The engine runs the waits (one waiter per
 * key and process attempts); this process's releases wake its own waiters at once, other
 * processes' waiters block on the key's GET_LOCK doorbell (MySqlDoorbell) and poll only where
 * they must. Across processes the longest-waiting waiter wins: a waiting request that
 * finds the key busy leaves a ticket row dated by the server, and a grant goes only to the holder
 * of the oldest live ticket (or to anyone when there is none); see mysql.acquire.ts.
 *
 * Safety: all of an acquire runs under the key's mutex with the holder rows locked, so no two
 * conflicting grants can commit; a renewal racing with a takeover either lands first (the holder
 * is live: busy) or finds its row gone. Fences come from one counter row locked until COMMIT, so
 * they grow strictly. No connection is held between attempts.
 */
export class MySqlLockBackend implements LockBackend {
  readonly name = 'mysql';
  /**
   * 512 UTF-16 units are at most 1536 UTF-8 bytes: they fit VARBINARY(2048) inside InnoDB's
   * 3072-byte index limit.
   */
  readonly capabilities: LockBackendCapabilities = {
    shared: true,
    fencing: 'strict',
    sessionBased: false,
    maxKeyLength: 512,
  };
  readonly table: string;
  readonly waitPolicy: BackendWaitPolicy;
  /**
   * This process's releases (in-process) and other processes' (GET_LOCK doorbells, else polling).
   */
  readonly wakeups: WakeupSource;
  private readonly source: SqlClientSource<MySqlPoolLike>;
  private readonly doorbells: number | undefined;
  private readonly sql: MySqlStatements;
  private readonly notifier = new ReleaseNotifier();
  private readonly doorbell: MySqlDoorbell;
  private readonly sweeper: SqlSweeper;
  private readonly schema: SchemaOnce;
  /** Whether the lock table has the holder column (read once with the schema; HOLDER_COLUMN). */
  private holderColumn = false;
  /**
   * ms a waiter's ticket outlives its last attempt: the longest pause between attempts + a margin.
   */
  private readonly ticketMs: number;
  /** `owner:key` of this process's waiters holding a ticket (dropped when they give up). */
  private readonly tickets = new Set<string>();
  /** Per key with a ticketed waiter here: older tickets at its last look (see MySqlDoorbell). */
  private readonly inLine = new Map<string, InLine>();

  constructor(options: MySqlLockBackendOptions) {
    const o = resolveMySqlOptions(options);
    this.source = o.source;
    this.doorbells = o.doorbells;
    const given = o.source.given;
    const slots = o.doorbells ?? (given ? defaultDoorbells(given) : 0);
    this.table = o.table;
    this.sql = mysqlStatements(this.table);
    this.doorbell = new MySqlDoorbell(
      () => this.pool(),
      o.table,
      slots,
      o.maxPollDelay,
      this.notifier,
      (key) => this.inLine.get(key)?.ahead,
      async (key) => {
        const line = this.inLine.get(key);
        return !line || this.withConnection((conn) => readPlace(conn, this.sql, line));
      },
    );
    // Without doorbells the notifier only hears this process's releases: poll the others at the
    // backoff pace. (A factory's pool is sized on first use; until then, and with 0 slots, the
    // doorbell polls.)
    const doorbells = o.doorbells !== 0 && (slots > 0 || !given);
    this.wakeups = doorbells ? this.doorbell : this.notifier;
    const fallbackDelay = doorbells ? 1_000 : o.maxPollDelay;
    this.waitPolicy = { minDelay: 5, maxDelay: o.maxPollDelay, fallbackDelay };
    this.ticketMs = Math.max(fallbackDelay, o.maxPollDelay) + TICKET_MARGIN_MS;
    this.sweeper = new SqlSweeper(o.sweepInterval, () => this.sweep());
    this.schema = new SchemaOnce(true, () => this.createSchema(o.createTable));
  }

  /**
   * One try: a short transaction that grants the lock or reports how long the blockers have left.
   */
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.tryRow(request, undefined);
  }

  /** Native semaphores: seat rows of the key, renewed and released as lock rows. */
  readonly semaphore: SemaphoreBackend = {
    tryAcquire: (request, permits) => this.tryRow(request, permits),
    renew: (seats) => this.renew(seats),
    release: (seat) => this.release(seat),
  };

  private async tryRow(request: BackendAttempt, permits: number | undefined) {
    checkSqlKey(request.key, this.capabilities.maxKeyLength);
    this.sweeper.start();
    await this.doorbell.ready();
    return this.attempt(request, permits);
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    if (locks.length === 0) return [];
    const answers = await this.withConnection((conn) => renewLocks(conn, this.sql, locks));
    locks.forEach((l, i) => answers[i] || this.doorbell.disarm(l.key, l.owner));
    return answers;
  }

  async release(lock: BackendLock): Promise<void> {
    // The doorbell rings (RELEASE_LOCK) only after the DELETE committed: a woken waiter finds the
    // row gone.
    const released = await this.withConnection(async (conn) => {
      // No SET TRANSACTION first (one round trip less on the handoff's path): an autocommit DELETE
      // by the whole primary key locks that one row (or, if it is gone, a gap for this statement
      // only).
      const key = bytes(lock.key);
      const [header] = await conn.execute(this.sql.release, [key, lock.owner]);
      // Ring now, before dropKey: dropKey waits for the mutex row, which the next holder's acquire
      // holds while it arms the doorbell (waiting for us to let go: a cycle no server would see).
      this.doorbell.disarm(lock.key, lock.owner);
      if (affected(header) === 0) return false;
      await conn.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      await conn.execute(this.sql.dropKey, [key, key]);
      return true;
    }).finally(() => this.doorbell.disarm(lock.key, lock.owner));
    if (released) this.notifier.notify(lock.key);
  }

  /**
   * Holders (owner, mode, ttl left by the server's clock) and the key's last fence, read without
   * locking.
   */
  async inspect(key: string): Promise<LockInspection> {
    const [rows] = await this.withConnection((conn) =>
      conn.execute(this.holderColumn ? this.sql.inspect : this.sql.inspectBare, [bytes(key)]),
    );
    const read = rows as {
      owner: string;
      mode: StoredMode;
      left_us: number | string | null;
      fence: unknown;
    }[];
    return toInspection(
      key,
      read.map((r) => ({ ...r, leftUs: Number(r.left_us ?? 0) })),
      this.name,
    );
  }

  /**
   * Deletes every holder row of `key`, whoever owns it. The old holder learns at its next renewal
   * (its handle's signal aborts); the next grant's fence is larger. Waiters of other processes wake
   * when the old holder's renewal fails and lets its doorbell go, or at their fallback re-attempt.
   */
  async forceRelease(key: string): Promise<boolean> {
    const removed = await this.withConnection(async (conn) => {
      await conn.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      const [header] = await conn.execute(this.sql.forceRelease, [bytes(key)]);
      await conn.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      await conn.execute(this.sql.dropKey, [bytes(key), bytes(key)]);
      return affected(header) > 0;
    });
    if (removed) this.notifier.notify(key);
    return removed;
  }

  /**
   * Held keys under `prefix`, at most `limit`: one range scan of the primary key (lock_key, owner)
   * from the prefix's bytes to their successor, stopping after `limit` distinct live keys.
   * Sent as a text-protocol query (not prepared): LIMIT's value would otherwise need its own shape.
   */
  async list(prefix: string, limit: number): Promise<string[]> {
    const { from, to } = keyRange(Buffer.from(prefix, 'utf8'));
    const [rows] = await this.withConnection((conn) =>
      conn.query(this.sql.list, [from, to, to, Math.max(0, Math.floor(limit))]),
    );
    return (rows as { lock_key: Buffer }[]).map((r) => Buffer.from(r.lock_key).toString('utf8'));
  }

  async close(): Promise<void> {
    this.sweeper.stop();
    await this.doorbell.close();
    this.notifier.notifyAll();
    await this.source.close();
  }

  /**
   * The pool: the one given, or the factory's (made on first use; its size sets the doorbell
   * slots).
   */
  private async pool(): Promise<MySqlPoolLike> {
    const pool = await this.source.get();
    if (this.doorbells === undefined && this.source.given === undefined)
      this.doorbell.slots = defaultDoorbells(pool);
    return pool;
  }

  /** Deletes rows that expired over a minute ago (and mutex rows left without holders). */
  private sweep(): Promise<void> {
    return this.withConnection(async (conn) => {
      await conn.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      await conn.execute(this.sql.sweepHolders, [SWEEP_GRACE_MS * 1000]);
      await conn.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      await conn.query(this.sql.sweepKeys);
    });
  }

  /** The acquire transaction (mysql.acquire.ts), then the doorbell and the ticket's bookkeeping. */
  private async attempt(
    request: BackendAttempt,
    permits: number | undefined,
  ): Promise<BackendAcquireResult> {
    const { key: fullKey, owner, mode } = request;
    // The engine's waits pass the whole BackendAcquireRequest: only a request that waits queues.
    const waits = ((request as Partial<BackendAcquireRequest>).wait ?? 0) > 0;
    const req = { key: bytes(fullKey), owner, mode, ttl: request.ttl, permits, waits };
    const outcome = await this.withConnection((conn) => {
      // Read after the schema check (withConnection): whether the table has the holder column.
      const holder = this.holderColumn ? holderData(request.holder) : undefined;
      return attemptAcquire(conn, this.sql, { ...req, ticketMs: this.ticketMs, holder }, this.name);
    });
    const line = `${owner}:${fullKey}`;
    if (outcome.result.acquired) {
      this.tickets.delete(line); // the grant replaced the ticket
      this.inLine.delete(fullKey);
      // Armed after COMMIT, not awaited: arming may wait for woken waiters to let go of the
      // doorbell, and must not hold the key's mutex meanwhile. A waiter that sees our row first
      // polls briefly. Semaphore seats are not armed: one process's doorbell could not tell the
      // waiters of the other seat holders' releases, so their waiters poll (the 'unarmed' backoff)
      // instead.
      if (permits === undefined) void this.doorbell.arm(fullKey, owner, mode === 'exclusive');
      return outcome.result;
    }
    if (!outcome.ticketed) this.inLine.delete(fullKey);
    else this.inLine.set(fullKey, { ahead: outcome.ahead ?? 0, key: req.key, owner, mode });
    if (outcome.ticketed && !this.tickets.has(line)) {
      this.tickets.add(line);
      // A waiter that gives up (deadline or cancel) takes its ticket back, so the key is not kept
      // for it; if that fails, the ticket lapses ticketMs after its last attempt. It may have
      // given up while this attempt ran: then at once (the signal fires no second 'abort').
      const drop = () => this.dropTicket(line, req.key, owner, fullKey);
      if (request.signal.aborted) drop();
      else request.signal.addEventListener('abort', drop, { once: true });
    }
    return outcome.result;
  }

  private dropTicket(line: string, key: Buffer, owner: string, fullKey: string): void {
    if (!this.tickets.delete(line)) return; // granted meanwhile: the ticket became the holder row
    this.inLine.delete(fullKey);
    this.withConnection((conn) => conn.execute(this.sql.dropTicket, [key, owner])).then(
      () => this.notifier.notify(fullKey), // this process's next waiter may now be first in line
      // Not lost: the ticket lapses ticketMs after its last attempt, and the key goes on.
      () => undefined,
    );
  }

  /**
   * Runs `work` on one pooled connection, returned right after (never kept across a wait). A
   * connection whose statement failed is destroyed, not pooled: it may sit in an open transaction
   * or be half-dead after a server restart.
   */
  private async withConnection<T>(work: (conn: MySqlConnectionLike) => Promise<T>): Promise<T> {
    await this.schema.ensure();
    return this.checkout(work);
  }

  private async checkout<T>(work: (conn: MySqlConnectionLike) => Promise<T>): Promise<T> {
    const conn = await (await this.pool()).getConnection();
    try {
      const result = await work(conn);
      conn.release();
      return result;
    } catch (error) {
      conn.destroy();
      throw error;
    }
  }

  /**
   * The tables (createTable, adding the holder column to an older lock table), then whether the
   * lock table has the holder column: once, before any call.
   */
  private createSchema(createTable: boolean): Promise<void> {
    return this.checkout(async (conn) => {
      if (createTable) for (const statement of this.sql.ddl) await conn.query(statement);
      const has = async () =>
        ((await conn.execute(this.sql.hasHolder, [this.table]))[0] as []).length > 0;
      this.holderColumn = await has();
      if (!this.holderColumn && createTable) {
        // Concurrent start-ups may both add it: the loser's "duplicate column" is fine.
        await conn.query(this.sql.addHolder).catch(() => undefined);
        this.holderColumn = await has();
      }
    });
  }
}

/**
 * Keys travel as their UTF-8 bytes (a binary parameter into a VARBINARY column): no connection
 * character set can transcode them, so two different keys can never arrive as the same bytes.
 */
function bytes(key: string): Buffer {
  return Buffer.from(key, 'utf8');
}
