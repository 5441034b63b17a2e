import type {
  BackendAcquireResult,
  BackendAttempt,
  LockMode,
} from '../../interfaces/lock-backend.interface';
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
  constructor(
    readonly request: BackendAttempt,
    tryOnce: boolean,
    private readonly done: (result: BackendAcquireResult) => void,
    private readonly failed: (error: unknown) => void,
    /** An election campaign's proposal (see ElectionBackend); absent for locks. */
    readonly proposal?: string,
  ) {
    this.givingUp = tryOnce || request.signal.aborted;
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
}
