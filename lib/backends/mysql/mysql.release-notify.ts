import { createHash } from 'node:crypto';
import { sleepFor, type ReleaseNotifier } from '../../backend-kit';
import type { ReleaseListener, WakeupSource } from '../../interfaces/lock-backend.interface';
import { keyDigest } from '../sql/key-digest';
import type { MySqlConnectionLike, MySqlPoolLike } from './mysql.options';

type Notice = 'notified' | 'unarmed' | 'timeout';

/**
 * When a ticketed waiter (see sql-tickets.ts) re-attempts after a notify, by its place at its
 * last attempt: the first in line at once (it takes the key's mutex row alone); the next one after
 * NOTIFY_NEXT_MS, about the first one's grant, so it finds the new holder and waits on its notify
 * lock; the others after NOTIFY_SPREAD_MS plus up to as much again at random (only to keep their
 * tickets and places fresh). A waiter without a ticket (a semaphore permit) re-attempts within
 * NOTIFY_SPREAD_MS.
 */
const NOTIFY_NEXT_MS = 2;
const NOTIFY_SPREAD_MS = 4;

/**
 * Longest poll pause of a ticketed waiter while the notify lock is not armed (a new holder arms it
 * right after its COMMIT): the first two in line 2 ms, the others 10 ms. Under FIFO nobody else may
 * take a free key, so a waiter asleep in a long backoff when its turn comes would leave it idle.
 */
const NEXT_POLL_MS = 2;
const QUEUED_POLL_MS = 10;
/**
 * A waiter `place` tickets back reads its place every FAR_POLL_MS x (place - 1), at most
 * FAR_POLL_MAX_MS.
 */
const FAR_POLL_MS = 3;
const FAR_POLL_MAX_MS = 30;

export interface MySqlReleaseNotifyOptions {
  readonly pool: () => Promise<MySqlPoolLike>;
  readonly table: string;
  /** Waiters that may block in GET_LOCK at once (0: none; set again once the pool is known). */
  readonly blockingWaiters: number;
  readonly maxPollDelay: number;
  /** This process's releases (by key digest): the waiters' local wake-ups. */
  readonly notifier: ReleaseNotifier;
  /** Older live tickets at the last attempt of this process's waiter (undefined: no ticket). */
  readonly place: (key: string) => number | undefined;
  /** One lock-free read of the waiter's place; true: re-attempt now (SqlTickets). */
  readonly recheck: (key: string) => Promise<boolean>;
}

/**
 * Wake-ups for MySQL/MariaDB waiters in OTHER processes, without polling: a per-key "notify lock",
 * a server-wide named lock (GET_LOCK) that a holding process keeps while it holds the
 * key and lets go right after its release (DELETE) has committed.
 *
 * Holder side: ONE "holder" connection per backend, checked out of the pool before the first
 * acquire takes its own connection and kept until close(), holds the notify locks of every key this
 * process holds (a session can hold many named locks). Arming follows the grant's COMMIT without
 * delaying the caller (it may wait for woken waiters to let go of the notify lock, and must not
 * hold the key's mutex row meanwhile); a waiter that sees the row before the notify lock is armed
 * polls briefly. Arm and disarm are serialized on the holder connection, so a release's disarm
 * never overtakes its grant's arm. Waiter side: the engine's head waiter of a key blocks in
 * `GET_LOCK(notify lock, wait)` on a pooled connection (IS_USED_LOCK first, RELEASE_LOCK at once,
 * all in one statement) and wakes the moment the holder lets go (the waiter first in line at once,
 * the others NOTIFY_SPREAD_MS later, so the processes woken together do not queue a herd on the
 * key's mutex row); at most `blockingWaiters` waiters block at once, the rest (and every waiter
 * while a notify lock is not armed: a process whose holder connection failed, shared holders beyond
 * the first) poll with jittered backoff. A notify is only a hint: every wake-up re-attempts the
 * acquire, whose transaction alone decides; a missed notify costs latency, never safety. Cost: 1 +
 * `blockingWaiters` pooled connections while in use; one GET_LOCK round trip on the holder
 * connection per grant (after it, off the caller's path) and one RELEASE_LOCK per release (right
 * after its DELETE); one statement per wait on a waiter connection.
 */
export class MySqlReleaseNotify implements WakeupSource {
  private holderConn: MySqlConnectionLike | undefined;
  private opening: Promise<void> | undefined;
  private chain: Promise<void> = Promise.resolve();
  /** Local holders per notify lock name; it is held while any of them holds the key. */
  private readonly owners = new Map<string, Set<string>>();
  /** Notify locks the holder connection holds right now. */
  private readonly armed = new Set<string>();
  /** Per key: current poll backoff while its notify lock is not armed. */
  private readonly backoff = new Map<string, number>();
  private active = 0;
  private closed = false;

  /** Set again once the pool is known (the default depends on its connectionLimit). */
  blockingWaiters: number;

  constructor(private readonly o: MySqlReleaseNotifyOptions) {
    this.blockingWaiters = o.blockingWaiters;
  }

  /**
   * The notify lock's name: a digest (GET_LOCK names are server-wide, at most 64 characters on
   * MySQL).
   */
  name(key: string): string {
    return `ndl:${createHash('sha256').update(`${this.o.table}\0${key}`).digest('hex').slice(0, 40)}`;
  }

  /**
   * Arms `key`'s notify lock for `owner`; resolves (never rejects) once armed, or found not armable
   * (an exclusive holder waits 0.2 s for woken waiters and the previous holder to let go).
   */
  arm(key: string, owner: string, exclusive: boolean): Promise<void> {
    if (this.blockingWaiters === 0 || this.closed) return Promise.resolve();
    const name = this.name(key);
    let set = this.owners.get(name);
    if (!set) this.owners.set(name, (set = new Set()));
    set.add(owner);
    if (set.size > 1) return Promise.resolve();
    const op = this.enqueue(async (holderConn) => {
      if (this.armed.has(name) || !this.owners.get(name)?.has(owner)) return;
      // Shared holders of other processes may hold it: do not wait for them.
      const [rows] = await holderConn.query('SELECT GET_LOCK(?, ?) AS got', [
        name,
        exclusive ? 0.2 : 0,
      ]);
      if (Number((rows as { got: unknown }[])[0]?.got) === 1) this.armed.add(name);
    });
    return op;
  }

  /**
   * Checks the holder connection out of the pool if it is not there yet. The backend calls it
   * BEFORE taking a connection for an acquire: an arm that waited for a pooled connection while the
   * acquires held them all would stall every acquire.
   */
  async ready(): Promise<void> {
    if (this.blockingWaiters === 0 || this.closed || this.holderConn) return;
    this.opening ??= this.o
      .pool()
      .then((pool) => pool.getConnection())
      .then(
        (conn) => {
          if (this.closed || this.holderConn) conn.release();
          else this.holderConn = conn;
        },
        () => undefined, // the acquire will report the outage; its grant goes unarmed
      )
      .finally(() => (this.opening = undefined));
    await this.opening;
  }

  /** Lets `key`'s notify lock go once no local holder is left (after the release committed). */
  disarm(key: string, owner: string): void {
    const name = this.name(key);
    const set = this.owners.get(name);
    if (!set?.delete(owner) || set.size > 0) return;
    this.owners.delete(name);
    void this.enqueue(async (holderConn) => {
      // re-armed by a new local holder
      if (this.owners.has(name) || !this.armed.delete(name)) return;
      await holderConn.query('SELECT RELEASE_LOCK(?) AS r', [name]);
    });
  }

  listen(key: string): ReleaseListener {
    const inner = this.o.notifier.listen(keyDigest(key));
    return {
      wait: async (ms, signal) => {
        const stop = new AbortController();
        const both = AbortSignal.any([signal, stop.signal]);
        const local = inner.wait(ms, both); // this process's own releases, the deadline, a cancel
        void this.wake(key, ms, both).finally(() => stop.abort());
        await local;
        stop.abort();
      },
      dispose: () => inner.dispose(),
    };
  }

  /**
   * Waits for the notify that concerns this process's waiter. The first in line (or a waiter
   * without a ticket) returns to re-attempt after the first notify or poll pause, as before. A
   * waiter further back does not re-attempt on every notify (a whole attempt locks the key's mutex
   * row the first in line needs): it reads its place (one lock-free statement) and goes back to the
   * notify lock until nobody is ahead of it and no conflicting holder is live. Bounded by `ms` (the
   * engine's fallback pause, shorter than the ticket life), so its ticket stays live and a dead
   * head cannot strand it.
   */
  private async wake(key: string, ms: number, signal: AbortSignal): Promise<void> {
    const deadline = performance.now() + ms;
    for (;;) {
      const before = this.o.place(key);
      if (before !== undefined && before > 1) {
        // Far back in line: no notify concerns it before (place - 1) handoffs; one read per pause.
        await sleepFor(
          Math.min(FAR_POLL_MAX_MS, FAR_POLL_MS * (before - 1)) * (1 + Math.random() / 2),
          signal,
        );
        if (signal.aborted || performance.now() >= deadline) return;
        try {
          if (await this.o.recheck(key)) return;
        } catch {
          return; // not swallowed: the re-attempt reports the outage
        }
        continue;
      }
      const outcome = await this.waitNotify(key, Math.max(1, deadline - performance.now()), signal);
      if (outcome === 'timeout' || signal.aborted) return;
      const place = this.o.place(key);
      if (outcome === 'notified') {
        this.backoff.delete(key);
        // Every process's head waiter wakes at once: the first in line goes now, the others a
        // few ms later, so it takes the key's mutex row alone instead of queueing behind a herd.
        if (place === undefined) return sleepFor(Math.random() * NOTIFY_SPREAD_MS, signal);
        if (place === 0) return;
        await sleepFor(NOTIFY_NEXT_MS, signal);
      } else {
        const cap = place === undefined ? Infinity : place <= 1 ? NEXT_POLL_MS : QUEUED_POLL_MS;
        await sleepFor(Math.random() * Math.min(cap, this.nextBackoff(key)), signal);
        if (place === undefined || place === 0) return;
      }
      if (signal.aborted || performance.now() >= deadline) return;
      try {
        if (await this.o.recheck(key)) return;
      } catch {
        return; // not swallowed: the re-attempt reports the outage
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.chain;
    this.broken(); // destroying the session lets go of every notify lock it holds
  }

  /** Blocks until the notify lock is let go, `ms` pass, or it is not armed (then polls). */
  private async waitNotify(key: string, ms: number, signal: AbortSignal): Promise<Notice> {
    if (this.active >= this.blockingWaiters || this.closed) return 'unarmed';
    this.active++;
    let conn: MySqlConnectionLike | undefined;
    try {
      conn = await (await this.o.pool()).getConnection();
      if (signal.aborted) return 'timeout';
      const name = this.name(key);
      const [rows] = await conn.query(
        'SELECT IS_USED_LOCK(?) AS used, GET_LOCK(?, ?) AS got, RELEASE_LOCK(?) AS r',
        [name, name, Math.max(0.001, ms / 1000), name],
      );
      const row = (rows as { used: unknown; got: unknown }[])[0];
      if (Number(row?.got) !== 1) return 'timeout';
      return row.used === null ? 'unarmed' : 'notified';
    } catch {
      // Not swallowed: the outcome says 'unarmed', so the waiter polls with backoff, and its next
      // acquire attempt (which alone decides) reports an outage to the caller.
      conn?.destroy();
      conn = undefined;
      return 'unarmed';
    } finally {
      conn?.release();
      this.active--;
    }
  }

  private nextBackoff(key: string): number {
    const delay = this.backoff.get(key) ?? 5;
    this.backoff.set(key, Math.min(delay * 2, this.o.maxPollDelay));
    if (this.backoff.size > 10_000) this.backoff.clear(); // bounded: keys are request data
    return delay;
  }

  /** Runs `op` on the holder connection after every earlier op; a failure drops the connection. */
  private enqueue(op: (holderConn: MySqlConnectionLike) => Promise<void>): Promise<void> {
    this.chain = this.chain.then(async () => {
      // No holder connection (not ready, or broken): the grant goes unarmed; never wait for the
      // pool here.
      if (this.closed || !this.holderConn) return;
      try {
        await op(this.holderConn);
      } catch {
        // The holder connection failed: drop it (the server lets go of its notify locks, waking the
        // waiters, who re-attempt); grants stay unarmed until ready() checks a new one out.
        this.broken();
      }
    });
    return this.chain;
  }

  /** The server lets go of a dropped session's notify locks: waiters wake, re-attempt, and poll. */
  private broken(): void {
    this.holderConn?.destroy();
    this.holderConn = undefined;
    this.armed.clear();
  }
}
