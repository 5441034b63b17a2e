import { sleepFor } from '../../backend-kit/wait-loop';
import type {
  BackendAcquireResult,
  BackendAttempt,
  LockMode,
  ReleaseListener,
} from '../../interfaces/lock-backend.interface';
import type { Contender } from './etcd.ops';
import type { EtcdSession } from './etcd.session';

/**
 * The records LocalQueue keeps: a Waiter is one acquire call of this process; an OwnKey is one
 * life of our contender key for a NAME (created, queued on etcd, held, deleted), shared by the
 * waiters that ride it and then by its holders.
 */
export class Waiter {
  /**
   * Give up at the next answer from etcd: a try-once, or its signal aborted before any answer came.
   */
  givingUp: boolean;
  settled = false;
  /** Answers the own key had when this waiter joined (it needs one more to be told "busy"). */
  seen = 0;
  /** A waiting request's (QueuedRequest's) news: an answer from etcd that did not grant it. */
  onBusy: (() => void) | undefined;
  constructor(
    readonly request: BackendAttempt,
    tryOnce: boolean,
    private readonly done: (result: BackendAcquireResult) => void,
    private readonly failed: (error: unknown) => void,
    /** An election campaign's proposal (see ElectionBackend); absent for locks. */
    readonly proposal?: string,
  ) {
    // A waiting request gives up through LocalQueue.leave (the engine's deadline and cancel).
    this.givingUp = tryOnce;
  }
  get mode(): LockMode {
    return this.request.mode;
  }
  settle(result: BackendAcquireResult): void {
    if (this.settled) return;
    this.settled = true;
    this.done(result);
  }
  fail(error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.failed(error);
  }
}

export class OwnKey {
  state: 'waiting' | 'held' | 'ended' = 'waiting';
  session: EtcdSession | undefined;
  key: Buffer | undefined;
  rev: bigint | undefined;
  readonly waiters = new Set<Waiter>();
  readonly holders = new Map<string, BackendAttempt['onLost']>();
  answers = 0;
  failure: unknown;
  wake = new AbortController();
  /**
   * Settlements of the last waiters, run once our key is deleted: "busy" means no key of ours is
   * left behind.
   */
  readonly leaving: (() => void)[] = [];
  unsubscribe: () => void = () => undefined;
  constructor(
    readonly mode: LockMode,
    /** An election campaign's proposal: the value of our key (concurrency.Election's layout). */
    readonly proposal?: string,
  ) {}

  /** Our key as a contender of the lock's range `lockPrefix` (once bound to a session). */
  contender(lockPrefix: Buffer): Contender {
    return { key: this.key as Buffer, lockPrefix, mode: this.mode, value: this.proposal };
  }
}

/** How a waiter settled. */
export type Outcome = { readonly result: BackendAcquireResult } | { readonly error: unknown };

/**
 * A waiting request (wait > 0) between the engine's attempts (LocalQueue.step): the Waiter it is
 * in LocalQueue, and how that settled. It is the busy answer's wake: news of the waiter (settled,
 * or an answer from etcd that did not grant it) ends the engine's sleep, and the next attempt reads
 * it, with no round trip.
 */
export class QueuedRequest implements ReleaseListener {
  readonly waiter: Waiter;
  outcome: Outcome | undefined;
  /** Resolves when the waiter settles. */
  readonly done: Promise<Outcome>;
  /** News came since the last attempt read the waiter. */
  private fresh = false;
  private settled!: (outcome: Outcome) => void;
  private wakeUp: (() => void) | undefined;

  constructor(request: BackendAttempt, proposal: string | undefined) {
    this.done = new Promise((resolve) => (this.settled = resolve));
    const settle = (outcome: Outcome) => this.settle(outcome);
    this.waiter = new Waiter(
      request,
      false,
      (result) => settle({ result }),
      (error) => settle({ error }),
      proposal,
    );
    this.waiter.onBusy = () => this.news();
  }

  /**
   * What the engine's attempt answers now: the outcome, else `failure` (etcd fails: thrown, so the
   * engine retries with backoff), else busy with this request as the wake.
   */
  answer(failure: unknown): BackendAcquireResult {
    this.fresh = false;
    const outcome = this.outcome;
    if (outcome && 'error' in outcome) throw outcome.error;
    if (outcome) return outcome.result;
    if (failure) throw failure;
    return { acquired: false, wake: this };
  }

  settle(outcome: Outcome): void {
    this.outcome = outcome;
    this.settled(outcome);
    this.news();
  }

  news(): void {
    this.fresh = true;
    this.wakeUp?.();
  }

  /** Resolves at the next news (at once if some came since the last attempt read it). */
  next(): Promise<void> {
    if (this.fresh) return Promise.resolve();
    return new Promise((resolve) => (this.wakeUp = resolve));
  }

  wait(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.fresh) return Promise.resolve();
    return sleepFor(ms, signal, (wake) => (this.wakeUp = wake)).finally(
      () => (this.wakeUp = undefined),
    );
  }

  dispose(): void {
    this.wakeUp?.();
  }
}
