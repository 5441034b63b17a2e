import { pollAcquire, sleepFor } from '../../backend-kit';
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
import { SqlSweeper, SWEEP_GRACE_MS } from '../mysql/sql-sweeper';
import { checkBoolean, checkKnownOptions, checkSqlKey, checkSweepInterval, checkTableName, decide, DEFAULT_TABLE, toBigInt } from '../mysql/sql-lock.rules';
import { PgReleaseListener, type PgListenClientLike, type PgListenConnector } from './postgres.listener';
import { advisoryClass, postgresStatements, type PostgresStatements } from './postgres.schema';

/**
 * PostgreSQL locks in a table: one row per holder, expiry in the SERVER's clock
 * (clock_timestamp()), never the application's. Acquire is one short READ COMMITTED transaction:
 * take the key's transaction-scoped advisory lock (the per-key mutex), lock and read every holder
 * row of the key, give up if a live holder conflicts, else delete expired holders (a dead
 * process's lock is taken over here) and insert our row with nextval() of the fence sequence;
 * COMMIT. Under the mutex with the holder rows locked, no two conflicting grants can commit, and a
 * renewal racing with a takeover either lands first (the holder is live: busy) or finds its row
 * gone. Release is an owner-checked DELETE that NOTIFYs the key; waiters sleep on ONE LISTEN
 * connection per backend (a dedicated pg Client built from the pool's own settings), bounded by the
 * holder's expiry, with polling as the fallback while it is down. Only one waiter per key and
 * process polls (LocalWaitQueue), and no pooled connection is held between attempts. Renew is ONE
 * statement for the whole batch.
 */

export interface PgQueryResultLike {
  rows: any[];
  rowCount: number | null;
}

/** The part of a pg PoolClient this backend uses. */
export interface PgPoolClientLike {
  query(text: string, values?: unknown[]): Promise<PgQueryResultLike>;
  release(destroy?: boolean | Error): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
  removeListener(event: 'error', listener: (error: Error) => void): unknown;
}

/** The part of a pg `Pool` this backend uses (Client/options: to open the dedicated LISTEN connection). */
export interface PgPoolLike {
  connect(): Promise<PgPoolClientLike>;
  readonly Client?: new (config: any) => PgListenClientLike & { connect(): Promise<unknown>; end(): Promise<void> };
  readonly options?: object;
}

export interface PostgresLockBackendOptions {
  /** A pg `Pool`; you keep owning it (give it an 'error' listener, as pg requires). */
  client: PgPoolLike;
  /** Table name (the fence sequence is <table>_fence, the channel <table>_released). Plain lower-case identifier. Default 'distributed_locks'. */
  table?: string;
  /** Create the table and sequence if missing (default true). false: a DBA creates them (see postgresDdl()). */
  createTable?: boolean;
  /**
   * Wake waiters by LISTEN/NOTIFY (default true): one extra connection per backend, opened with the
   * pool's settings outside the pool (or checked out of it if the pool cannot make clients). false = poll only.
   */
  notifications?: boolean;
  /** Longest pause between two polls of a waiter without notifications, in ms (default 250). */
  maxPollDelay?: number;
  /** ms between sweeps of rows expired for over a minute (keys nobody locks again); default 60000, 0 = never. */
  sweepInterval?: number;
}

const OPTIONS = ['client', 'table', 'createTable', 'notifications', 'maxPollDelay', 'sweepInterval'] as const;

export class PostgresLockBackend implements LockBackend {
  readonly name = 'postgres';
  /** 512 UTF-16 units are at most 1536 UTF-8 bytes: well inside a btree entry (about 2700 bytes). */
  readonly capabilities: LockBackendCapabilities = { shared: true, fencing: 'strict', sessionBased: false, maxKeyLength: 512 };
  readonly table: string;
  private readonly pool: PgPoolLike;
  private readonly sql: PostgresStatements;
  private readonly classId: number;
  private readonly createTable: boolean;
  private readonly maxPollDelay: number;
  private readonly notifier = new ReleaseNotifier();
  /** One poller per key in this process; the other waiters of the key queue behind it in arrival order. */
  private readonly waiters = new LocalWaitQueue('postgres');
  private readonly listener: PgReleaseListener | undefined;
  private readonly sweeper: SqlSweeper;
  private schema: Promise<void> | undefined;

  constructor(options: PostgresLockBackendOptions) {
    if (!options || typeof options !== 'object') throw new InvalidLockOptionsError('PostgresLockBackend options', options, '{ client, table?, createTable? }');
    checkKnownOptions('PostgresLockBackend', options, OPTIONS);
    // A pg Client has connect() too, but cannot be checked out per attempt: a Pool is required.
    if (!options.client || typeof options.client.connect !== 'function' || 'connectionParameters' in options.client) {
      throw new InvalidLockOptionsError('client', options.client, "a pg Pool (new Pool(...) from 'pg'), not a Client");
    }
    this.pool = options.client;
    this.table = options.table === undefined ? DEFAULT_TABLE : checkTableName(options.table);
    this.createTable = checkBoolean('createTable', options.createTable, true);
    this.maxPollDelay = options.maxPollDelay === undefined ? 250 : checkDuration('maxPollDelay', options.maxPollDelay, 1);
    this.sql = postgresStatements(this.table);
    this.classId = advisoryClass(this.table);
    this.sweeper = new SqlSweeper(checkSweepInterval(options.sweepInterval), () => this.run((c) => c.query(this.sql.sweep, [SWEEP_GRACE_MS])));
    if (checkBoolean('notifications', options.notifications, true)) {
      this.listener = new PgReleaseListener(listenConnector(this.pool), this.sql.channel, this.notifier);
    }
  }

  /** One attempt: the native acquire with wait 0. */
  tryAcquire(request: BackendAttempt): Promise<BackendAcquireResult> {
    return this.acquire({ ...request, wait: 0 });
  }

  async acquire(request: BackendAcquireRequest): Promise<BackendAcquireResult> {
    checkSqlKey(request.key, this.capabilities.maxKeyLength);
    this.sweeper.start();
    const attempt = () => this.waiters.attempt(() => this.attempt(request.key, request.owner, request.mode, request.ttl));
    const poll = () =>
      pollAcquire(request, attempt, {
        backend: this.name,
        notifier: this.listener?.listening ? this.notifier : undefined,
        minDelay: 5,
        maxDelay: this.maxPollDelay,
      });
    return this.waiters.run(request, async () => {
      if (request.wait === 0 || !this.listener || this.listener.listening) return poll();
      const first = await attempt().catch(() => undefined);
      if (first?.acquired || request.signal.aborted) return first ?? poll();
      // About to wait: bring the LISTEN connection up first (bounded by the caller's deadline); poll()
      // re-attempts at once, so a release that happened before LISTEN was active is not missed.
      await Promise.race([this.listener.start(), sleepFor(request.wait, request.signal)]);
      return poll();
    });
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    if (locks.length === 0) return [];
    const { rows } = await this.run((c) =>
      c.query(this.sql.renew, [locks.map((l) => l.key), locks.map((l) => l.owner), locks.map((l) => l.ttl)]),
    );
    const renewed = new Set((rows as { lock_key: string; owner: string }[]).map((r) => `${r.owner}:${r.lock_key}`));
    return locks.map((l) => renewed.has(`${l.owner}:${l.key}`));
  }

  async release(lock: BackendLock): Promise<void> {
    const { rows } = await this.run((c) => c.query(this.sql.release, [lock.key, lock.owner, this.sql.channel]));
    // Our own waiters need not wait for the NOTIFY round trip (or for a LISTEN connection that is down).
    if (rows.length > 0) this.notifier.notify(lock.key);
  }

  async close(): Promise<void> {
    this.sweeper.stop();
    await this.listener?.close();
    this.notifier.notifyAll();
  }

  /** One try: a short transaction that grants the lock or reports how long the blockers have left. */
  private attempt(key: string, owner: string, mode: LockMode, ttl: number): Promise<BackendAcquireResult> {
    return this.run(async (c) => {
      // A failure anywhere below destroys the connection (run), which rolls the transaction back.
      await c.query(this.sql.begin);
      await c.query(this.sql.mutex, [this.classId, key]);
      // A new statement after the mutex: its snapshot sees every grant committed before we got it.
      const { rows } = await c.query(this.sql.holders, [key]);
      const decision = decide(rows.map((r: { owner: string; mode: LockMode; left_us: string }) => ({ owner: r.owner, mode: r.mode, leftUs: Number(r.left_us) })), mode);
      if (decision.blocked) {
        await c.query('ROLLBACK');
        return { acquired: false, retryAfter: decision.retryAfter };
      }
      // The server dates the row's expiry when this statement runs: date our validity from just before
      // sending it, never from before the waits for a pooled client or the key's advisory lock.
      const sentAt = performance.now();
      const granted = await c.query(this.sql.grant, [key, owner, mode, ttl]);
      await c.query('COMMIT');
      return { acquired: true, fencingToken: toBigInt(granted.rows[0].fence), sentAt };
    });
  }

  /** Runs `work` on one pooled client, returned right after; a client whose query failed is destroyed, not pooled. */
  private async run<T>(work: (client: PgPoolClientLike) => Promise<T>): Promise<T> {
    await this.ensureSchema();
    return this.checkout(work);
  }

  /**
   * While a client is checked out, pg emits a dropped connection as an 'error' event on it (the
   * pool listens only to idle clients): without a listener that would crash the process. The
   * failing query rejects as well, which is what we act on.
   */
  private async checkout<T>(work: (client: PgPoolClientLike) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const ignore = () => undefined;
    client.on('error', ignore);
    try {
      const result = await work(client);
      client.removeListener('error', ignore);
      client.release();
      return result;
    } catch (error) {
      client.removeListener('error', ignore);
      client.release(true);
      throw error;
    }
  }

  private ensureSchema(): Promise<void> {
    if (!this.createTable) return Promise.resolve();
    this.schema ??= this.checkout(async (client) => {
      // Concurrent CREATE ... IF NOT EXISTS can still collide in the catalog: serialize them.
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1::int4, 0)', [this.classId]);
      for (const statement of this.sql.ddl) await client.query(statement);
      await client.query('COMMIT');
    }).catch((error: unknown) => {
      this.schema = undefined; // retry on the next call (e.g. the server was down)
      throw error;
    });
    return this.schema;
  }
}

/** The LISTEN connection: a dedicated Client with the pool's settings, else one checked out of the pool. */
function listenConnector(pool: PgPoolLike): PgListenConnector {
  const Client = pool.Client;
  if (typeof Client === 'function' && pool.options) {
    return {
      open: async () => {
        const client = new Client(pool.options);
        client.on('error', () => undefined);
        try {
          await client.connect();
        } catch (error) {
          await client.end().catch(() => undefined);
          throw error;
        }
        return client;
      },
      close: (client) => (client as unknown as { end(): Promise<void> }).end(),
    };
  }
  return {
    open: async () => (await pool.connect()) as unknown as PgListenClientLike,
    close: async (client) => (client as unknown as PgPoolClientLike).release(true),
  };
}
