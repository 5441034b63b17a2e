import { pollAcquire } from '../../backend-kit';
import { checkDuration } from '../../backend-kit';
import { ReleaseNotifier } from '../../backend-kit';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type {
  BackendAcquireRequest,
  BackendAttempt,
  BackendAcquireResult,
  BackendLock,
  LockBackend,
  LockBackendCapabilities,
  LockMode,
} from '../../interfaces/lock-backend.interface';
import { LocalWaitQueue } from '../../backend-kit';
import { SqlSweeper, SWEEP_GRACE_MS } from './sql-sweeper';
import { mysqlStatements, type MySqlStatements } from './mysql.schema';
import { checkBoolean, checkKnownOptions, checkSqlKey, checkSweepInterval, checkTableName, decide, DEFAULT_TABLE, toBigInt, type HolderRow } from './sql-lock.rules';

/**
 * MySQL 8 / MariaDB 10.11 locks in a table: one row per holder, expiry in the SERVER's clock
 * (UTC_TIMESTAMP(3)), never the application's. Acquire is one short READ COMMITTED transaction:
 * X-lock the key's mutex row (<table>_keys), lock and read every holder row of the key, give up if
 * a live holder conflicts, else delete expired holders (a dead process's lock is taken over here),
 * take the next fence from the counter row and insert our row; COMMIT. Because all of it runs under
 * the key's mutex with the holder rows locked, no two conflicting grants can commit, and a renewal
 * racing with a takeover either lands first (the holder is live: busy) or finds its row gone.
 * Release and renew are owner-checked single statements (renew: ONE statement for the whole batch).
 * Waiting polls with jittered backoff (bounded by the holder's expiry), plus an in-process wake-up
 * on our own releases; only one waiter per key and process polls (LocalWaitQueue), and no
 * connection is held between attempts.
 */

/** One statement's answer, as mysql2/promise gives it: [rows or ResultSetHeader, fields]. */
type MySqlResult = [unknown, unknown];

/** The part of a mysql2/promise pool connection this backend uses. */
export interface MySqlConnectionLike {
  query(sql: string): Promise<MySqlResult>;
  execute(sql: string, values: (string | number | Buffer)[]): Promise<MySqlResult>;
  release(): void;
  destroy(): void;
}

/** The part of a mysql2/promise `Pool` this backend uses. */
export interface MySqlPoolLike {
  getConnection(): Promise<MySqlConnectionLike>;
}

export interface MySqlLockBackendOptions {
  /** A mysql2/promise pool (`createPool(...)`); you keep owning it. Needs InnoDB. */
  client: MySqlPoolLike;
  /** Base name of the tables (<table>, <table>_keys, <table>_fence). Plain lower-case identifier. Default 'distributed_locks'. */
  table?: string;
  /** Create the tables if missing (default true). false: a DBA creates them (see mysqlDdl()). */
  createTable?: boolean;
  /** Longest pause between two polls of a waiter, in ms (default 100): bounds the handoff delay to another process. */
  maxPollDelay?: number;
  /** ms between sweeps of rows expired for over a minute (keys nobody locks again); default 60000, 0 = never. */
  sweepInterval?: number;
}

const OPTIONS = ['client', 'table', 'createTable', 'maxPollDelay', 'sweepInterval'] as const;

export class MySqlLockBackend implements LockBackend {
  readonly name = 'mysql';
  /** 512 UTF-16 units are at most 1536 UTF-8 bytes: they fit VARBINARY(2048) inside InnoDB's 3072-byte index limit. */
  readonly capabilities: LockBackendCapabilities = { shared: true, fencing: 'strict', sessionBased: false, maxKeyLength: 512 };
  readonly table: string;
  private readonly pool: MySqlPoolLike;
  private readonly sql: MySqlStatements;
  private readonly createTable: boolean;
  private readonly maxPollDelay: number;
  /** Wakes this backend's own waiters on its own releases; other processes' releases are found by polling. */
  private readonly notifier = new ReleaseNotifier();
  /** One poller per key in this process; the other waiters of the key queue behind it in arrival order. */
  private readonly waiters = new LocalWaitQueue('mysql');
  private readonly sweeper: SqlSweeper;
  private schema: Promise<void> | undefined;

  constructor(options: MySqlLockBackendOptions) {
    if (!options || typeof options !== 'object') throw new InvalidLockOptionsError('MySqlLockBackend options', options, '{ client, table?, createTable? }');
    checkKnownOptions('MySqlLockBackend', options, OPTIONS);
    const client = options.client as MySqlPoolLike & { promise?: unknown };
    // mysql2's callback-style pool has getConnection(cb) too, and promise() to get the promise API.
    if (!client || typeof client.getConnection !== 'function' || typeof client.promise === 'function') {
      throw new InvalidLockOptionsError('client', client, "a mysql2/promise Pool (createPool from 'mysql2/promise', or pool.promise())");
    }
    this.pool = options.client;
    this.table = options.table === undefined ? DEFAULT_TABLE : checkTableName(options.table);
    this.createTable = checkBoolean('createTable', options.createTable, true);
    this.maxPollDelay = options.maxPollDelay === undefined ? 100 : checkDuration('maxPollDelay', options.maxPollDelay, 1);
    this.sql = mysqlStatements(this.table);
    this.sweeper = new SqlSweeper(checkSweepInterval(options.sweepInterval), () => this.sweep());
  }

  /** One attempt: the native acquire with wait 0. */
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.acquire({ ...request, wait: 0 });
  }

  async acquire(request: BackendAcquireRequest): Promise<BackendAcquireResult> {
    checkSqlKey(request.key, this.capabilities.maxKeyLength);
    this.sweeper.start();
    const attempt = () => this.waiters.attempt(() => this.attempt(bytes(request.key), request.owner, request.mode, request.ttl));
    return this.waiters.run(request, () =>
      pollAcquire(request, attempt, {
        backend: this.name,
        notifier: this.notifier,
        minDelay: 5,
        maxDelay: this.maxPollDelay,
        // Our notifier only hears this process's releases: keep polling other processes' at the backoff pace.
        fallbackDelay: this.maxPollDelay,
      }),
    );
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    if (locks.length === 0) return [];
    // Sorted in primary-key order, the order an acquire locks a key's rows in: no lock-order deadlocks.
    const sorted = locks.map((lock, at) => ({ lock, at, key: bytes(lock.key) })).sort((a, b) => Buffer.compare(a.key, b.key) || (a.lock.owner < b.lock.owner ? -1 : 1));
    const results = await this.withConnection(async (conn) => {
      await conn.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      const [header] = await conn.execute(this.sql.renew(sorted.length), sorted.flatMap((l) => [l.key, l.lock.owner, l.lock.ttl * 1000]));
      // Every matched row is ours and was live. All matched (the usual case): done in one statement.
      if (affected(header) === sorted.length) return sorted.map(() => true);
      // Some did not: MariaDB has no UPDATE ... RETURNING, so ask which rows are ours and live now.
      // A renewed row stays live for a ttl (>= 30 ms); a row that was not renewed cannot become ours.
      const [rows] = await conn.execute(this.sql.alive(sorted.length), sorted.flatMap((l) => [l.key, l.lock.owner]));
      const live = new Set((rows as { lock_key: Buffer; owner: string }[]).map((r) => `${r.owner}:${Buffer.from(r.lock_key).toString('hex')}`));
      return sorted.map((l) => live.has(`${l.lock.owner}:${l.key.toString('hex')}`));
    });
    const answers = new Array<boolean>(locks.length);
    sorted.forEach((l, i) => (answers[l.at] = results[i]));
    return answers;
  }

  async release(lock: BackendLock): Promise<void> {
    const released = await this.withConnection(async (conn) => {
      await conn.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      const key = bytes(lock.key);
      const [header] = await conn.execute(this.sql.release, [key, lock.owner]);
      if (affected(header) === 0) return false;
      await conn.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      await conn.execute(this.sql.dropKey, [key, key]);
      return true;
    });
    if (released) this.notifier.notify(lock.key);
  }

  async close(): Promise<void> {
    this.sweeper.stop();
    this.notifier.notifyAll();
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

  /** One try: a short transaction that grants the lock or reports how long the blockers have left. */
  private attempt(key: Buffer, owner: string, mode: LockMode, ttl: number): Promise<BackendAcquireResult> {
    return this.withConnection(async (conn) => {
      await conn.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      // A failure anywhere below destroys the connection (withConnection), which rolls the transaction back.
      await conn.query('START TRANSACTION');
      await conn.execute(this.sql.lockKey, [key]);
      const [rows] = await conn.execute(this.sql.holders, [key]);
      const holders = (rows as { owner: string; mode: LockMode; left_us: number | string | null }[]).map(
        (r): HolderRow => ({ owner: r.owner, mode: r.mode, leftUs: Number(r.left_us ?? 0) }),
      );
      const decision = decide(holders, mode);
      if (decision.blocked) {
        await conn.query('ROLLBACK');
        return { acquired: false, retryAfter: decision.retryAfter };
      }
      if (decision.expired > 0) await conn.execute(this.sql.purge, [key]);
      const [fence] = await conn.execute(this.sql.nextFence, []);
      const fencingToken = toBigInt((fence as { insertId: unknown }).insertId);
      // The row's expiry is dated by the server when this statement runs: date our validity from just
      // before sending it, never from before the waits for a pooled connection or the key's mutex row.
      const sentAt = performance.now();
      await conn.execute(this.sql.insert, [key, owner, mode, ttl * 1000, fencingToken.toString()]);
      await conn.query('COMMIT');
      return { acquired: true, fencingToken, sentAt };
    });
  }

  /**
   * Runs `work` on one pooled connection, returned right after (never kept across a wait). A
   * connection whose statement failed is destroyed, not pooled: it may sit in an open transaction
   * or be half-dead after a server restart.
   */
  private async withConnection<T>(work: (conn: MySqlConnectionLike) => Promise<T>): Promise<T> {
    await this.ensureSchema();
    const conn = await this.pool.getConnection();
    try {
      const result = await work(conn);
      conn.release();
      return result;
    } catch (error) {
      conn.destroy();
      throw error;
    }
  }

  private ensureSchema(): Promise<void> {
    if (!this.createTable) return Promise.resolve();
    this.schema ??= (async () => {
      const conn = await this.pool.getConnection();
      try {
        for (const statement of this.sql.ddl) await conn.query(statement);
        conn.release();
      } catch (error) {
        conn.destroy();
        throw error;
      }
    })().catch((error: unknown) => {
      this.schema = undefined; // retry on the next call (e.g. the server was down)
      throw error;
    });
    return this.schema;
  }
}

function affected(header: unknown): number {
  return Number((header as { affectedRows?: number }).affectedRows ?? 0);
}

/**
 * Keys travel as their UTF-8 bytes (a binary parameter into a VARBINARY column): no connection
 * character set can transcode them, so two different keys can never arrive as the same bytes.
 */
function bytes(key: string): Buffer {
  return Buffer.from(key, 'utf8');
}
