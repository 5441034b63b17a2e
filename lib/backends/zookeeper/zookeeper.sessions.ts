import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { ZooKeeperClientLike } from './zookeeper.client';
import type { ZooKeeperLockStats } from './zookeeper.own-node';
import { checkZooKeeperClient, type CheckedZooKeeperOptions } from './zookeeper.options';
import { ZooKeeperSession, type SessionEvents, type SessionState } from './zookeeper.session';

/** The options a session needs; sessionTimeout is checked against what the server negotiated. */
export type ZooKeeperSessionsOptions = Pick<
  CheckedZooKeeperOptions,
  'client' | 'clientFactory' | 'sessionTimeout' | 'authInfo'
>;

/**
 * The backend's one current session: over the user's client, or, with clientFactory, a client we
 * create (and close) whenever the last session has ended, since an expired ZooKeeper client never
 * serves again. Each new client gets the auth info before it connects; a session whose negotiated
 * timeout differs from the one asked for is refused, because lock loss is judged by that timeout.
 */
export class ZooKeeperSessions {
  private session: ZooKeeperSession | undefined;

  constructor(
    private readonly backend: string,
    private readonly options: ZooKeeperSessionsOptions,
    private readonly stats: ZooKeeperLockStats,
    private readonly events: SessionEvents,
    private readonly closed: () => boolean,
  ) {
    if (options.client) this.session = this.open(options.client, false);
  }

  /**
   * true when a session that ended can be replaced (clientFactory was given and the backend is
   * open).
   */
  get renewable(): boolean {
    return !!this.options.clientFactory && !this.closed();
  }

  /**
   * The session's state, 'closed' once the backend closed, or 'connecting' before the first client.
   */
  get state(): SessionState {
    return this.session?.state ?? (this.closed() ? 'closed' : 'connecting');
  }

  /** The current session, if any, without opening one. */
  get latest(): ZooKeeperSession | undefined {
    return this.session;
  }

  /**
   * The live session, or a new one from clientFactory; throws when the backend is closed or no
   * session can be had.
   */
  current(key: string): ZooKeeperSession {
    if (this.closed())
      throw new LockBackendUnavailableError(this.backend, 'the backend was closed', { key });
    if (this.session && !this.session.dead) return this.session;
    const factory = this.options.clientFactory;
    if (!factory) {
      throw new LockBackendUnavailableError(
        this.backend,
        `${this.session?.lostReason ?? 'the ZooKeeper session ended'}; the client cannot be used again. Pass clientFactory so the backend opens a new session, or create a new client and backend`,
        { key },
      );
    }
    let client: unknown;
    try {
      client = factory();
    } catch (error) {
      throw new LockBackendUnavailableError(this.backend, 'clientFactory threw', {
        key,
        cause: error,
      });
    }
    this.session = this.open(checkZooKeeperClient(client, 'clientFactory'), true);
    return this.session;
  }

  /**
   * Throws InvalidLockOptionsError when the server negotiated another timeout than the options
   * asked for.
   */
  checkNegotiated(session: ZooKeeperSession, key: string): void {
    const expected = this.options.sessionTimeout;
    if (expected === undefined || session.sessionTimeout === expected) return;
    throw new InvalidLockOptionsError(
      'sessionTimeout',
      expected,
      `a session timeout the server accepts unchanged: it negotiated ${session.sessionTimeout} ms (ZooKeeper clamps requests into [minSessionTimeout, maxSessionTimeout], by default 2 to 20 ticks)`,
      key,
    );
  }

  /** Forgets the session and closes it (an owned client only; the user's stays theirs). */
  async close(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    await session?.close();
  }

  private open(client: ZooKeeperClientLike, owned: boolean): ZooKeeperSession {
    this.stats.sessions++;
    // Before connect (the driver sends them in the handshake and after every reconnect).
    for (const a of this.options.authInfo)
      client.addAuthInfo?.(
        a.scheme,
        Buffer.isBuffer(a.auth) ? a.auth : Buffer.from(a.auth, 'utf8'),
      );
    return new ZooKeeperSession(client, owned, {
      connected: (s) => this.events.connected(s),
      lost: (s, reason) => {
        this.events.lost(s, reason);
        if (s.dead && s.owned) void s.close();
      },
    });
  }
}
