import { CLOSE_TIMEOUT_MS, holderData, ReleaseNotifier, toBigInt, within } from '../../backend-kit';
import type {
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
import { keyDigest } from '../sql/key-digest';
import { checkSqlKey, decide, storedMode, type StoredMode } from '../sql/sql-lock.rules';
import { textKeyRange } from '../sql/sql-listing';
import { SqlClientSource } from '../sql/sql-client';
import { toInspection } from '../sql/sql-inspection';
import { SchemaOnce } from '../sql/sql-schema';
import { SqlSweeper, SWEEP_GRACE_MS } from '../sql/sql-sweeper';
import {
  PgReleaseListener,
  type PgListenConnector,
  type PgListenClientLike,
} from './postgres.listener';
import {
  destroyPgClientSocket,
  resolvePostgresOptions,
  type PgPoolClientLike,
  type PgPoolLike,
  type PostgresLockBackendOptions,
} from './postgres.options';
import { advisoryClass, postgresStatements, type PostgresStatements } from './postgres.schema';

/**
 * PostgreSQL locks in a table: one row per holder, expiry in the SERVER's clock
 * (clock_timestamp()), never the application's.
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
export class PostgresLockBackend implements LockBackend {
  readonly name = 'postgres';
  /**
   * 512 UTF-16 units are at most 1536 UTF-8 bytes: well inside a btree entry (about 2700 bytes).
   */
  readonly capabilities: LockBackendCapabilities = {
    shared: true,
    fencing: 'strict',
    sessionBased: false,
    maxKeyLength: 512,
  };
  readonly table: string;
  readonly waitPolicy: BackendWaitPolicy;
  /** The LISTEN connection's wake-ups (undefined with notifications: false: the engine polls). */
  readonly wakeups: WakeupSource | undefined;
  private readonly source: SqlClientSource<PgPoolLike>;
  private readonly sql: PostgresStatements;
  private readonly classId: number;
  private readonly notifier = new ReleaseNotifier();
  private readonly listener: PgReleaseListener | undefined;
  private readonly sweeper: SqlSweeper;
  private readonly schema: SchemaOnce;
  /** Whether the table has the holder column (read once with the schema; see HOLDER_COLUMN). */
  private holderColumn = false;

  constructor(options: PostgresLockBackendOptions) {
    const o = resolvePostgresOptions(options);
    this.source = o.source;
    this.table = o.table;
    this.sql = postgresStatements(this.table);
    this.classId = advisoryClass(this.table);
    this.waitPolicy = { minDelay: 5, maxDelay: o.maxPollDelay };
    this.sweeper = new SqlSweeper(o.sweepInterval, () =>
      this.run((c) => c.query(this.sql.sweep, [SWEEP_GRACE_MS])),
    );
    this.schema = new SchemaOnce(true, () => this.createSchema(o.createTable));
    if (o.notifications) {
      this.listener = new PgReleaseListener(
        listenConnector(() => this.source.get()),
        this.sql.channel,
        this.notifier,
        o.maxPollDelay,
      );
    }
    this.wakeups = this.listener;
  }

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
    return this.attempt(request, permits);
  }

  async renew(locks: readonly BackendLock[]): Promise<boolean[]> {
    if (locks.length === 0) return [];
    const values = [locks.map((l) => l.key), locks.map((l) => l.owner), locks.map((l) => l.ttl)];
    const { rows } = await this.run((c) => c.query(this.sql.renew, values));
    const renewed = new Set(
      (rows as { lock_key: string; owner: string }[]).map((r) => `${r.owner}:${r.lock_key}`),
    );
    return locks.map((l) => renewed.has(`${l.owner}:${l.key}`));
  }

  async release(lock: BackendLock): Promise<void> {
    const { rows } = await this.run((c) =>
      c.query(this.sql.release, [lock.key, lock.owner, this.sql.channel]),
    );
    // Our own waiters need not wait for the NOTIFY round trip (or for a LISTEN connection that is
    // down).
    if (rows.length > 0) this.notifier.notify(keyDigest(lock.key));
  }

  /**
   * Holders (owner, mode, ttl left by the server's clock) and the key's last fence, read without
   * locking.
   */
  async inspect(key: string): Promise<LockInspection> {
    const { rows } = await this.run((c) =>
      c.query(this.holderColumn ? this.sql.inspect : this.sql.inspectBare, [key]),
    );
    const read = rows as { owner: string; mode: StoredMode; left_us: string; fence: string }[];
    return toInspection(
      key,
      read.map((r) => ({ ...r, leftUs: Number(r.left_us) })),
      this.name,
    );
  }

  /**
   * Deletes every holder row of `key`, whoever owns it, and NOTIFYs waiters. The old holder learns
   * at its next renewal (its handle's signal aborts); the next grant's fence is larger.
   */
  async forceRelease(key: string): Promise<boolean> {
    const { rows } = await this.run((c) => c.query(this.sql.forceRelease, [key, this.sql.channel]));
    if (rows.length > 0) this.notifier.notify(keyDigest(key));
    return rows.length > 0;
  }

  /** Held keys under `prefix`, at most `limit`: one range scan of the COLLATE "C" key index. */
  async list(prefix: string, limit: number): Promise<string[]> {
    const { from, to } = textKeyRange(prefix);
    const { rows } = await this.run((c) =>
      c.query(this.sql.list, [from, to, Math.max(0, Math.floor(limit))]),
    );
    return (rows as { lock_key: string }[]).map((r) => r.lock_key);
  }

  async close(): Promise<void> {
    this.sweeper.stop();
    await this.listener?.close();
    this.notifier.notifyAll();
    await this.source.close();
  }

  /**
   * One try: a short transaction that grants the lock or reports how long the blockers have left.
   */
  private attempt(request: BackendAttempt, permits: number | undefined) {
    const { key, owner, mode, ttl } = request;
    return this.run(async (c): Promise<BackendAcquireResult> => {
      // A failure anywhere below destroys the connection (run), which rolls the transaction back.
      await c.query(this.sql.begin);
      await c.query(this.sql.mutex, [this.classId, key]);
      // A new statement after the mutex: its snapshot sees every grant committed before we got it.
      const { rows } = await c.query(this.sql.holders, [key]);
      const holders = rows.map((r: { owner: string; mode: StoredMode; left_us: string }) => ({
        owner: r.owner,
        mode: r.mode,
        leftUs: Number(r.left_us),
      }));
      const decision = decide(holders, mode, permits);
      if (decision.blocked) {
        await c.query('ROLLBACK');
        return { acquired: false, retryAfter: decision.retryAfter };
      }
      // The server dates the row's expiry when this statement runs: date our validity from just
      // before sending it, never from before the waits for a pooled client or the key's advisory
      // lock.
      const sentAt = performance.now();
      const row = [key, owner, storedMode(mode, permits), ttl];
      const granted = this.holderColumn
        ? await c.query(this.sql.grant, [...row, holderData(request.holder) || null])
        : await c.query(this.sql.grantBare, row);
      await c.query('COMMIT');
      return { acquired: true, fencingToken: toBigInt(granted.rows[0].fence, this.name), sentAt };
    });
  }

  /**
   * Runs `work` on one pooled client, returned right after; a client whose query failed is
   * destroyed, not pooled.
   */
  private async run<T>(work: (client: PgPoolClientLike) => Promise<T>): Promise<T> {
    await this.schema.ensure();
    return this.checkout(work);
  }

  /**
   * While a client is checked out, pg emits a dropped connection as an 'error' event on it (the
   * pool listens only to idle clients): without a listener that would crash the process. The
   * failing query rejects as well, which is what we act on.
   */
  private async checkout<T>(work: (client: PgPoolClientLike) => Promise<T>): Promise<T> {
    const client = await (await this.source.get()).connect();
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

  /** The table (createTable), then whether it has the holder column: once, before any call. */
  private createSchema(createTable: boolean): Promise<void> {
    return this.checkout(async (client) => {
      if (createTable) {
        // Concurrent CREATE ... IF NOT EXISTS can still collide in the catalog: serialize them.
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock($1::int4, 0)', [this.classId]);
        for (const statement of this.sql.ddl) await client.query(statement);
        await client.query('COMMIT');
      }
      const { rows } = await client.query(this.sql.hasHolder, [`"${this.table}"`]);
      this.holderColumn = rows.length > 0;
    });
  }
}

/**
 * The LISTEN connection: a dedicated Client with the pool's settings, else one checked out of the
 * pool.
 */
function listenConnector(getPool: () => Promise<PgPoolLike>): PgListenConnector {
  const dedicated = new WeakSet<PgListenClientLike>();
  return {
    open: async () => {
      const pool = await getPool();
      const Client = pool.Client;
      if (typeof Client !== 'function' || !pool.options)
        return (await pool.connect()) as unknown as PgListenClientLike;
      const client = new Client(pool.options);
      // Until the listener attaches its own handler (which reconnects), a socket error must not
      // crash the process.
      client.on('error', () => undefined);
      try {
        await client.connect();
      } catch (error) {
        // The connect error below is the one to report; ending a client that never connected can
        // only fail again.
        await client.end().catch(() => undefined);
        throw error;
      }
      dedicated.add(client);
      return client;
    },
    close: async (client) => {
      if (!dedicated.has(client)) return (client as unknown as PgPoolClientLike).release(true);
      // end() waits for the server's goodbye, which a black hole never sends.
      const ending = (client as unknown as { end(): Promise<void> }).end();
      if ((await within(ending, CLOSE_TIMEOUT_MS / 2)) !== 'done') destroyPgClientSocket(client);
    },
  };
}
