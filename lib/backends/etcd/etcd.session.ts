import { safeValidity } from '../../backend-kit';
import type { EtcdClientLike, EtcdKeepAliveStream } from './etcd.client';
import { leaseHex } from './etcd.keys';

/**
 * One etcd session = one lease, kept alive over a keepalive stream every ttl/3 (as Go's
 * concurrency.Session). Every contender key of this backend is attached to the lease, so when the
 * process dies or is partitioned the keys vanish after the TTL and the next contender proceeds.
 *
 * Safety rests on a local, conservative validity: a keepalive answered by etcd proves the lease
 * lives at least `ttl` after the moment the request was *sent* (the server resets it on receipt),
 * so validUntil = sentAt + ttl - drift margin, on the monotonic clock. When validUntil passes
 * without a newer answer (etcd unreachable, or this process was paused), or etcd answers that the
 * lease is gone, the session is lost at once: every check of validity runs before any network
 * call, so a paused process learns it on resume without waiting for a round trip.
 */
export type SessionLostListener = (reason: string, cause?: unknown) => void;

export class EtcdSession {
  /** Lease id as etcd's decimal string (exceeds 2^53: never a number). */
  readonly id: string;
  /** Lease id in lowercase hex, no padding: the last segment of every contender key. */
  readonly hex: string;
  /** When the last keepalive answer arrived (monotonic ms). */
  lastAnswerAt: number;
  private validUntil: number;
  private state: 'alive' | 'lost' | 'closed' = 'alive';
  private stream: EtcdKeepAliveStream | undefined;
  private opening = false;
  /**
   * Send times of unanswered keepalives, oldest first (answers come back in order on one stream).
   */
  private sent: number[] = [];
  private tickTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<SessionLostListener>();

  private constructor(
    /**
     * The client the lease was granted on; every request of this session's keys goes through it.
     */
    readonly client: EtcdClientLike,
    id: string,
    /** Granted TTL in ms (etcd may raise a requested TTL to its minimum, never lower it). */
    readonly ttl: number,
    sentAt: number,
    private readonly callTimeout: number,
    private readonly now: () => number,
  ) {
    this.id = id;
    this.hex = leaseHex(id);
    this.lastAnswerAt = now();
    this.validUntil = sentAt + safeValidity(ttl);
    this.tickTimer = setInterval(() => this.tick(), Math.max(1, Math.floor(ttl / 3)));
    this.tickTimer.unref();
    this.armExpiry();
  }

  /** Grants a lease of `ttl` ms (whole seconds) and starts keeping it alive. */
  static async grant(
    client: EtcdClientLike,
    ttl: number,
    callTimeout: number,
    now: () => number,
  ): Promise<EtcdSession> {
    const sentAt = now();
    const res = await client.leaseClient.leaseGrant(
      { TTL: ttl / 1000 },
      { deadline: Date.now() + callTimeout },
    );
    if (res.error) throw new Error(`etcd refused the lease: ${res.error}`);
    return new EtcdSession(
      client,
      res.ID,
      Math.max(ttl, Number(res.TTL) * 1000),
      sentAt,
      callTimeout,
      now,
    );
  }

  /**
   * Alive and locally known valid right now. Checks the clock, so a resumed process sees the truth.
   */
  get alive(): boolean {
    if (this.state === 'alive' && this.now() >= this.validUntil) {
      this.lose(
        `no keepalive of session lease ${this.hex} was confirmed within its ${this.ttl} ms TTL (etcd unreachable or this process paused)`,
      );
    }
    return this.state === 'alive';
  }

  /**
   * Reachability hint for waiters: a keepalive was answered within the last two keepalive periods.
   */
  get healthy(): boolean {
    return this.alive && this.now() - this.lastAnswerAt <= (this.ttl * 2) / 3 + 50;
  }

  /** Calls `fn` once when the session is lost (not when it is closed). Returns an unsubscribe. */
  onLost(fn: SessionLostListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Stops keeping the lease alive and revokes it (deleting every key on it). */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.stop();
    await this.revoke();
  }

  private tick(): void {
    try {
      if (!this.alive) return;
      if (!this.stream) return this.open();
      this.sent.push(this.now());
      this.stream.write({ ID: this.id });
    } catch {
      this.retrySoon();
    }
  }

  private open(): void {
    if (this.opening) return;
    this.opening = true;
    this.client.leaseClient.leaseKeepAlive().then(
      (stream) => {
        this.opening = false;
        if (this.state !== 'alive') return stream.end();
        this.stream = stream;
        stream.on('data', (res) => this.answered(stream, res.TTL));
        stream.on('error', () => this.retrySoon(stream));
        stream.on('end', () => this.retrySoon(stream));
        this.tick();
      },
      () => {
        this.opening = false;
        this.retrySoon();
      },
    );
  }

  /**
   * A broken stream (its member died, say) is replaced at once, on another member when the client
   * has several, rather than at the next tick: validity keeps running meanwhile.
   */
  private retrySoon(stream?: EtcdKeepAliveStream): void {
    if (stream && stream !== this.stream) return;
    this.dropStream();
    if (this.state !== 'alive' || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.tick();
    }, 100);
    this.retryTimer.unref();
  }

  private answered(stream: EtcdKeepAliveStream, ttlSeconds: string): void {
    if (stream !== this.stream || this.state !== 'alive') return;
    const sentAt = this.sent.shift();
    if (ttlSeconds === '0') {
      this.lose(`etcd reports session lease ${this.hex} expired or revoked`);
      return;
    }
    this.lastAnswerAt = this.now();
    if (sentAt !== undefined && this.alive) {
      this.validUntil = Math.max(this.validUntil, sentAt + safeValidity(Number(ttlSeconds) * 1000));
      this.armExpiry();
    }
  }

  private dropStream(stream?: EtcdKeepAliveStream): void {
    if (stream && stream !== this.stream) return;
    const s = this.stream;
    this.stream = undefined;
    this.sent = [];
    try {
      s?.cancel();
    } catch {
      // already closed
    }
  }

  private armExpiry(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = setTimeout(
      () => void this.alive,
      Math.max(0, this.validUntil - this.now()) + 1,
    );
    this.expiryTimer.unref();
  }

  private lose(reason: string, cause?: unknown): void {
    if (this.state !== 'alive') return;
    this.state = 'lost';
    this.stop();
    // The lease may still live on etcd (answers delayed, not lost): revoke so our keys stop
    // blocking others.
    void this.revoke();
    for (const fn of [...this.listeners]) {
      try {
        fn(reason, cause);
      } catch {
        // a listener must not stop the others
      }
    }
    this.listeners.clear();
  }

  private stop(): void {
    if (this.tickTimer) clearInterval(this.tickTimer);
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.tickTimer = this.expiryTimer = this.retryTimer = undefined;
    this.dropStream();
  }

  private async revoke(): Promise<void> {
    try {
      await this.client.leaseClient.leaseRevoke(
        { ID: this.id },
        { deadline: Date.now() + this.callTimeout },
      );
    } catch {
      // Unreachable or already expired: either way the lease ends by its TTL.
    }
  }
}
