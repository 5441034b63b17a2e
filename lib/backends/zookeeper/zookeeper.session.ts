import { CLOSE_TIMEOUT_MS, toBigInt } from '../../backend-kit';
import { lockDirs } from './zookeeper.dirs';
import {
  STATE_CONNECTED_READ_ONLY,
  STATE_DISCONNECTED,
  STATE_EXPIRED,
  STATE_SYNC_CONNECTED,
  type ZooKeeperClientLike,
} from './zookeeper.client';

export type SessionState = 'connecting' | 'connected' | 'disconnected' | 'expired' | 'closed';

export interface SessionEvents {
  /** The connection came back (same session): queued requests and watches resume. */
  connected(session: ZooKeeperSession): void;
  /**
   * The session is gone (server said EXPIRED) or presumed gone (the connection stayed down
   * longer than the negotiated session timeout): its ephemeral nodes, our locks, are gone too.
   */
  lost(session: ZooKeeperSession, reason: string): void;
}

/**
 * One ZooKeeper session = one client. Tracks the connection state the driver reports and turns a
 * disconnection that outlasts the session timeout into "lost": the server expires a session it has
 * not heard from for that long, so past it we can no longer claim our ephemeral nodes exist
 * (node-zookeeper-client itself only learns of the expiry when it reaches a server again).
 */
export class ZooKeeperSession {
  state: SessionState;
  /**
   * Set while the session is (presumed) lost: final after EXPIRED or close, cleared if the same
   * session reconnects.
   */
  lostReason: string | undefined;
  private doubtTimer: NodeJS.Timeout | undefined;
  private handshakeTimer: NodeJS.Timeout | undefined;
  private waiters = new Set<() => void>();
  private everConnected = false;
  /** Negotiated timeout of the last connection (ms). */
  sessionTimeout = 0;
  sessionId = 0n;
  private readonly onState = (s: { readonly code: number }) => this.handleState(s.code);

  constructor(
    readonly client: ZooKeeperClientLike,
    /** true when the backend created the client (clientFactory) and must close it. */
    readonly owned: boolean,
    private readonly events: SessionEvents,
  ) {
    client.on('state', this.onState);
    const code = client.getState()?.code;
    this.state = 'connecting';
    if (code === STATE_SYNC_CONNECTED || code === STATE_CONNECTED_READ_ONLY) this.markConnected();
    else if (code === STATE_EXPIRED)
      this.markLost('the ZooKeeper session had expired before the backend got the client');
    if (owned) client.connect();
    if (this.state === 'connecting') this.armHandshakeWatch();
  }

  get connected(): boolean {
    return this.state === 'connected';
  }

  /** Resolves true once connected, false if the signal aborts first or the session is lost. */
  whenConnected(signal?: AbortSignal): Promise<boolean> {
    if (this.state === 'connected') return Promise.resolve(true);
    if (this.dead || signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve(this.state === 'connected');
      };
      this.waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Expired or closed: this client will never serve a request again. */
  get dead(): boolean {
    return this.state === 'expired' || this.state === 'closed';
  }

  /** True when this session never connected yet (a first connect may take a moment). */
  get fresh(): boolean {
    return !this.everConnected;
  }

  async close(): Promise<void> {
    if (this.state === 'closed') return;
    // node-zookeeper-client breaks (throws from its socket handler) when closed while its first
    // handshake is in flight: let an owned client finish connecting first, for a bounded time.
    if (this.owned && !this.everConnected && !this.dead)
      await this.whenConnected(AbortSignal.timeout(2_000));
    this.clearDoubt();
    this.clearHandshakeWatch();
    this.client.removeListener('state', this.onState);
    if (this.lostReason === undefined) this.lostReason = 'the backend was closed';
    this.state = 'closed';
    this.wakeWaiters();
    lockDirs.flush(this.client);
    if (this.owned) {
      try {
        this.client.close();
      } catch {
        // closing an already closed client is harmless
      }
      // close() only queues CLOSE_SESSION: a server that never answers (a black hole) would keep
      // the socket, and the process, alive. Destroyed past the close bound; the timer does not
      // hold the process itself once the socket has closed.
      setTimeout(() => destroyZooKeeperSocket(this.client), CLOSE_TIMEOUT_MS).unref();
    }
  }

  private handleState(code: number): void {
    if (this.state === 'closed' || this.state === 'expired') return;
    if (code === STATE_SYNC_CONNECTED || code === STATE_CONNECTED_READ_ONLY) {
      // Back on the same session (even after a long outage, the server may have kept it): usable
      // again.
      this.lostReason = undefined;
      this.markConnected();
      this.events.connected(this);
    } else if (code === STATE_DISCONNECTED) {
      this.state = 'disconnected';
      this.armDoubt();
      this.armHandshakeWatch();
    } else if (code === STATE_EXPIRED) {
      this.state = 'expired';
      this.clearHandshakeWatch();
      this.markLost('the ZooKeeper session expired');
    }
  }

  private markConnected(): void {
    this.clearDoubt();
    this.clearHandshakeWatch();
    this.state = 'connected';
    this.everConnected = true;
    this.sessionTimeout = this.client.getSessionTimeout();
    try {
      this.sessionId = toBigInt(this.client.getSessionId(), 'zookeeper');
    } catch {
      this.sessionId = 0n;
    }
    this.wakeWaiters();
  }

  /**
   * A disconnection longer than the session timeout means the server has (or may have) expired us.
   */
  private armDoubt(): void {
    if (this.doubtTimer || !this.everConnected) return;
    const timeout = this.sessionTimeout;
    this.doubtTimer = setTimeout(() => {
      this.doubtTimer = undefined;
      if (this.state !== 'disconnected' && this.state !== 'connecting') return;
      try {
        this.markLost(
          `the connection to ZooKeeper was down longer than the session timeout (${timeout} ms), so the session and its ephemeral lock nodes are presumed expired`,
        );
      } catch {
        // never throw from a timer
      }
    }, timeout);
    this.doubtTimer.unref();
  }

  private clearDoubt(): void {
    if (this.doubtTimer) clearTimeout(this.doubtTimer);
    this.doubtTimer = undefined;
  }

  private clearHandshakeWatch(): void {
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = undefined;
  }

  /**
   * node-zookeeper-client has no handshake timeout: a TCP connection whose ConnectRequest the
   * server never answers (seen with ZooKeeper 3.8 on connections accepted while it starts up) hangs
   * until the server's sessionless-connection timeout (10 s), long enough to lose the session.
   * While we are not connected, a connection that stays open without a handshake answer for one to
   * two sixths of the session timeout is destroyed, so the driver tries again (the Java client does
   * this with its read timeout). It reaches into the driver's internals defensively and does
   * nothing if they differ.
   */
  private armHandshakeWatch(): void {
    if (this.handshakeTimer) return;
    // Before the first connect the timeout is not negotiated yet: check every second then.
    const every =
      this.sessionTimeout > 0 ? Math.max(Math.floor(this.sessionTimeout / 6), 200) : 1_000;
    let watched: unknown;
    const check = () => {
      this.handshakeTimer = undefined;
      if (this.state !== 'disconnected' && this.state !== 'connecting') return;
      try {
        const socket = (
          this.client as unknown as {
            connectionManager?: { socket?: { readyState?: string; destroy?: () => void } };
          }
        ).connectionManager?.socket;
        // Destroy only a socket that was already open at the previous check: its handshake is
        // overdue.
        if (
          socket &&
          socket === watched &&
          socket.readyState === 'open' &&
          typeof socket.destroy === 'function'
        )
          socket.destroy();
        watched = socket;
      } catch {
        // never throw from a timer
      }
      this.handshakeTimer = setTimeout(check, every);
      this.handshakeTimer.unref();
    };
    this.handshakeTimer = setTimeout(check, every);
    this.handshakeTimer.unref();
  }

  /** Presumed lost (doubt) or lost for good (expired): the second still matters after the first. */
  private markLost(reason: string): void {
    this.clearDoubt();
    if (this.lostReason !== undefined && !this.dead) return;
    this.lostReason = reason;
    this.wakeWaiters();
    this.events.lost(this, reason);
  }

  private wakeWaiters(): void {
    for (const w of [...this.waiters]) w();
  }
}

/**
 * The socket of a node-zookeeper-client Client (its ConnectionManager's), destroyed: the driver
 * then sees its socket close while closing and does not reconnect.
 */
function destroyZooKeeperSocket(client: unknown): void {
  const socket = (client as { connectionManager?: { socket?: { destroy?(): void } } })
    ?.connectionManager?.socket;
  if (typeof socket?.destroy === 'function') socket.destroy();
}
