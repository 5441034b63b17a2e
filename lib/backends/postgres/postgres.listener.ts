import { CLOSE_TIMEOUT_MS, sleepFor, within, type ReleaseNotifier } from '../../backend-kit';
import type { ReleaseListener, WakeupSource } from '../../interfaces/lock-backend.interface';
import { keyDigest } from '../sql/key-digest';
import {
  destroyPgClientSocket,
  type PgListenClientLike,
  type PgPoolClientLike,
  type PgPoolLike,
} from './postgres.options';

export type { PgListenClientLike } from './postgres.options';

/** A woken waiter re-attempts this much later per older ticket (at most four). */
const NOTIFY_STEP_MS = 2;

/** How the listener obtains and disposes of its one connection. */
export interface PgListenConnector {
  open(): Promise<PgListenClientLike>;
  close(client: PgListenClientLike): Promise<void>;
}

/**
 * ONE listening connection per backend (not one per waiter): LISTENs on the backend's channel and
 * feeds every NOTIFY payload (a released key's digest) into the ReleaseNotifier its waiters sleep
 * on. It is the backend's WakeupSource: `prepare` starts it when a waiter first sleeps (bounded, so
 * a frozen server cannot hold the waiter's line), and while it is down a waiter's sleep is capped
 * to a jittered poll delay, so waiters poll instead. When the connection breaks it reconnects with
 * backoff, and after every (re)connect wakes all waiters, since releases may have been missed
 * meanwhile. Never throws from a timer or an event handler.
 */
export class PgReleaseListener implements WakeupSource {
  private client: PgListenClientLike | undefined;
  private timer: NodeJS.Timeout | undefined;
  private delay = 100;
  private started: Promise<void> | undefined;
  private closed = false;
  listening = false;

  constructor(
    private readonly connector: PgListenConnector,
    private readonly channel: string,
    private readonly notifier: ReleaseNotifier,
    private readonly maxPollDelay: number,
    /** Older live tickets at the last attempt of this process's waiter (undefined: no ticket). */
    private readonly place: (key: string) => number | undefined = () => undefined,
  ) {}

  /**
   * Brings LISTEN up (once); waits for it at most one poll delay, after which it goes on in the
   * background.
   */
  async prepare(): Promise<void> {
    // within(), not a race with a sleep: the bound's timer ends with the start, so a long poll
    // delay keeps no timer (and no process) alive after LISTEN is up.
    await within(this.start(), this.maxPollDelay);
  }

  listen(key: string): ReleaseListener {
    const inner = this.notifier.listen(keyDigest(key)); // NOTIFY payloads are digests
    return {
      wait: async (ms, signal) => {
        // Without an active LISTEN no NOTIFY can arrive: sleep a jittered poll delay at most.
        const cap = this.listening
          ? ms
          : Math.min(ms, this.maxPollDelay * (0.5 + Math.random() / 2));
        const from = performance.now();
        await inner.wait(cap, signal);
        const place = this.place(key);
        if (!place || signal.aborted || performance.now() - from >= cap) return;
        // Woken behind older tickets, as every process's waiter is: re-attempt a little later, so
        // the first in line takes the key's mutex and rows alone, not behind the others' attempts.
        await sleepFor(Math.min(place, 4) * NOTIFY_STEP_MS * (1 + Math.random() / 2), signal);
      },
      dispose: () => inner.dispose(),
    };
  }

  /**
   * Starts listening in the background (idempotent); resolves once LISTEN is active or the first
   * try failed.
   */
  start(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.started ??= this.connect();
    return this.started;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listening = false;
    if (this.timer) clearTimeout(this.timer);
    await this.drop();
    this.notifier.notifyAll();
  }

  private async connect(): Promise<void> {
    this.timer = undefined;
    if (this.closed) return;
    let client: PgListenClientLike | undefined;
    try {
      client = await this.connector.open();
      this.client = client;
      client.on('error', () => this.broken(client));
      client.on('end', () => this.broken(client));
      client.on('notification', (message) => {
        if (message.channel === this.channel && message.payload !== undefined)
          this.notifier.notify(message.payload);
      });
      // The channel derives from the validated table name (a plain identifier): safe to quote in.
      await client.query(`LISTEN "${this.channel}"`);
      if (this.closed) return void (await this.drop());
      this.listening = true;
      this.delay = 100;
      this.notifier.notifyAll();
    } catch {
      // Not swallowed: broken() reconnects with backoff, and waiters poll (listening is false).
      this.broken(client);
    }
  }

  /** The connection failed or ended: drop it and reconnect later (unless closed). */
  private broken(client: PgListenClientLike | undefined): void {
    if (client !== undefined && client !== this.client) return; // an old connection's late event
    this.listening = false;
    void this.drop();
    if (this.closed || this.timer) return;
    this.timer = setTimeout(() => void this.connect(), this.delay);
    this.timer.unref();
    this.delay = Math.min(this.delay * 2, 2_000);
  }

  private async drop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    client.removeAllListeners('notification');
    client.removeAllListeners('end');
    // Keep an error listener: a late socket error on a dropped client must not crash the process.
    client.removeAllListeners('error');
    client.on('error', () => undefined);
    // The connection is already being given up (broken or closing): a failure to end it changes
    // nothing. Bounded: a stopped server never answers the goodbye.
    await within(this.connector.close(client), CLOSE_TIMEOUT_MS);
  }
}

/**
 * The LISTEN connection: a dedicated Client with the pool's settings, else one checked out of the
 * pool.
 */
export function listenConnector(getPool: () => Promise<PgPoolLike>): PgListenConnector {
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
