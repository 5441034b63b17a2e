/**
 * Retries of a failed release, in the background. A release that fails (a failover, a slot
 * migration, a connection reset) would otherwise leave the key held for the rest of its ttl while
 * the holder has moved on: every waiter pays the ttl, not the outage. The release is
 * owner-checked on every backend, so repeating it is safe: it deletes the grant only while it is
 * still ours, and an answer of any kind (deleted, already gone, someone else's) ends the retries.
 */
import type { LockActivity } from '../activity/lock-activity';
import type { LockLease } from './lock-lease';

/** The first retry comes this long after the failure; each next one after twice as long... */
export const RELEASE_RETRY_FIRST_MS = 100;
/** ...up to this (so a release follows a failover within about this much of its end). */
export const RELEASE_RETRY_MAX_MS = 1_000;

/** How one retry series ended: released (the backend answered), expired, or shutdown. */
export type ReleaseRetryOutcome = 'released' | 'expired' | 'shutdown';

/** What a retry series needs of the engine. */
export interface ReleaseRetryHost {
  readonly activity: LockActivity;
  /**
   * One release attempt of `lease` within the engine's budget (not reported as releaseFailed:
   * the first failure was, and the end of the series is reported as releaseRetried).
   */
  attempt(lease: LockLease): Promise<void>;
}

interface Series {
  readonly lease: LockLease;
  readonly startedAt: number;
  attempts: number;
  delay: number;
  timer?: NodeJS.Timeout;
  /** The attempt on its way: true once it answered. */
  inFlight?: Promise<boolean>;
}

/**
 * The engine's release retries (one per engine): `start` after a failed release; each series runs
 * on its own unref'd timer with jittered doubling backoff until an attempt answers or the lease's
 * validity (the ttl from its last confirmation, less the drift allowance) has passed, when the
 * server drops the key by itself. Nobody awaits a series: the holder's release() settled with the
 * first attempt. `stop` (close) ends every series with one last attempt within the engine's budget.
 */
export class ReleaseRetries {
  private readonly series = new Map<LockLease, Series>();
  private stopped = false;

  constructor(private readonly host: ReleaseRetryHost) {}

  /** Number of releases being retried now. */
  get size(): number {
    return this.series.size;
  }

  /**
   * Retries `lease`'s release from now on, unless it is already retried, its validity has passed,
   * or it lingers for minHold (its release is a renewal to holdUntil; deleting it would end the
   * hold early, and the failed renewal leaves the key to expire at its previous deadline anyway).
   */
  start(lease: LockLease): void {
    const now = performance.now();
    if (this.stopped || this.series.has(lease) || now >= lease.validUntil || now < lease.holdUntil)
      return;
    const s: Series = { lease, startedAt: now, attempts: 0, delay: RELEASE_RETRY_FIRST_MS };
    this.series.set(lease, s);
    this.schedule(s);
  }

  /**
   * Ends every series with one last attempt each (the one on its way, or a new one), awaited: each
   * is one engine call, bounded by the engine's budget.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(
      [...this.series.values()].map(async (s) => {
        clearTimeout(s.timer);
        const answered = await (s.inFlight ?? this.send(s));
        this.end(s, answered ? 'released' : 'shutdown');
      }),
    );
  }

  /** One attempt: true when the backend answered. Never rejects. */
  private send(s: Series): Promise<boolean> {
    s.attempts++;
    s.inFlight = this.host.attempt(s.lease).then(
      () => true,
      () => false,
    );
    return s.inFlight;
  }

  private schedule(s: Series): void {
    // Jitter (0.75x to 1.25x): the holders of many keys on one failed node do not retry in step.
    const delay = s.delay * (0.75 + Math.random() / 2);
    s.delay = Math.min(s.delay * 2, RELEASE_RETRY_MAX_MS);
    s.timer = setTimeout(() => this.tick(s), delay);
    s.timer.unref?.();
  }

  /** Never throws (a timer callback): every outcome is handled here. */
  private tick(s: Series): void {
    s.timer = undefined;
    if (this.stopped || !this.series.has(s.lease)) return;
    if (performance.now() >= s.lease.validUntil) return this.end(s, 'expired');
    void this.send(s).then((answered) => {
      s.inFlight = undefined;
      if (this.stopped) return; // stop() ends the series with this answer
      if (answered) this.end(s, 'released');
      else if (performance.now() >= s.lease.validUntil) this.end(s, 'expired');
      else this.schedule(s);
    });
  }

  private end(s: Series, outcome: ReleaseRetryOutcome): void {
    if (!this.series.delete(s.lease)) return;
    this.host.activity.releaseRetried(s.lease, {
      attempts: s.attempts,
      outcome,
      retryMs: performance.now() - s.startedAt,
    });
  }
}
