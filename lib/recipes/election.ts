import { hostname } from 'node:os';
import { checkLockKey, checkOptionsObject, checkString } from '../backend-kit';
import { MAX_KEY_LENGTH } from '../backend-kit/limits';
import type { GrantDriver } from '../core/acquire/pipeline-context';
import { reported } from '../core/activity/observe';
import type { LockHandle } from '../core/lease/lock-handle';
import type { RecipeHost } from '../core/recipe-host';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import type { LockBackend } from '../interfaces/lock-backend.interface';

/** Options of a campaign. All durations in ms. */
export interface CampaignOptions {
  /**
   * How long leadership survives a leader that went silent (crash, pause, partition). Default: the
   * module's ttl.
   */
  ttl?: number;
  /** Registered backend name. Default 'default'. */
  backend?: string;
  /**
   * What this candidate announces while it leads (etcd: the value `etcdctl elect -l` prints;
   * ZooKeeper: the LeaderLatch node's data, Curator's participant id). Default `<hostname>:<pid>`.
   */
  proposal?: string;
}

export type LeadershipListener = (leader: boolean, term: LockHandle | undefined) => void;

/** A campaign's option names (any other is rejected, as acquire rejects unknown names). */
const CAMPAIGN_OPTIONS: readonly string[] = ['ttl', 'backend', 'proposal'];
/** The longest proposal a candidate may announce. */
const MAX_PROPOSAL_LENGTH = 1_024;

/**
 * Validates a campaign as acquire validates a call (the name as a key `election:<name>` on its
 * backend, ttl, backend, unknown names) plus its proposal, so a bad campaign throws at once
 * instead of failing every round forever. Returns the options.
 */
export function checkCampaign(host: RecipeHost, name: unknown, options: unknown): CampaignOptions {
  if (typeof name !== 'string' || name.length === 0)
    throw new InvalidLockOptionsError('name', name, 'a non-empty string');
  const o =
    options === undefined
      ? {}
      : checkOptionsObject<CampaignOptions>('options', options, CAMPAIGN_OPTIONS);
  const key = `election:${name}`;
  const resolved = host.resolveOptions({ ttl: o.ttl, backend: o.backend }, key);
  checkLockKey(key);
  const fullKey = host.keyPrefix + key;
  const max = Math.min(MAX_KEY_LENGTH, host.backend(resolved.backend).capabilities.maxKeyLength);
  if (fullKey.length > max) checkLockKey(fullKey, max);
  if (o.proposal !== undefined) {
    checkString('proposal', o.proposal);
    if (o.proposal.length > MAX_PROPOSAL_LENGTH)
      throw new InvalidLockOptionsError(
        'proposal',
        o.proposal,
        `at most ${MAX_PROPOSAL_LENGTH} characters (got ${o.proposal.length})`,
        key,
      );
  }
  return o;
}

/** An error no later round can cure: the request itself is wrong (a backend's own key rules). */
function unrecoverable(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === 'INVALID_LOCK_OPTIONS' || code === 'LOCK_KEY_RESOLUTION';
}

/** Each round of waiting is bounded so a campaign re-checks resign() and backend health. */
const ROUND_MS = 60_000;
/** Pause after a failed round (backend unavailable) before campaigning again. */
const BACKOFF_MS = 1_000;

/**
 * Leader election over the lock machinery, on every backend: campaigning is waiting for the
 * exclusive lock `election:<name>`; leading is holding it (the watchdog renews it); leadership
 * ends when the lock is lost (expiry, session loss, forceRelease: the term's signal aborts at
 * once) or on resign(). After a loss the instance campaigns again. Safety is the lock's: at most
 * one instance holds it within its validity, and each term carries the lock's fencing token, so
 * a deposed leader's late writes can be refused downstream. A leader that is paused past its ttl
 * learns of the loss on its next read of `isLeader`/`term.signal` (checked synchronously).
 */
export class Leadership {
  private current: LockHandle | undefined;
  private resigned = false;
  private readonly cancel = new AbortController();
  private readonly listeners = new Set<LeadershipListener>();
  private readonly loop: Promise<void>;
  /** Rejects with the error that stopped the campaign (see unrecoverable); whenLeader races it. */
  private readonly stopped: Promise<never>;
  private stop!: (error: unknown) => void;

  /** Throws InvalidLockOptionsError at once for a bad name or options (see checkCampaign). */
  constructor(
    private readonly host: RecipeHost,
    readonly name: string,
    private readonly options: CampaignOptions = {},
  ) {
    this.options = checkCampaign(host, name, options);
    this.stopped = new Promise<never>((_, reject) => (this.stop = reject));
    this.stopped.catch(() => undefined); // nobody need be waiting for it
    this.loop = host.runInScope(() => this.campaign());
  }

  /** false once resigned, or stopped by an error no round can cure: campaign(name) starts anew. */
  get active(): boolean {
    return !this.resigned;
  }

  /** true while this instance leads (its term's lock is held and valid). */
  get isLeader(): boolean {
    return this.current?.held ?? false;
  }

  /** The current term's handle (fencing token, signal that aborts when leadership is lost). */
  get term(): LockHandle | undefined {
    return this.isLeader ? this.current : undefined;
  }

  /**
   * Calls `listener(true, term)` on every win and `listener(false)` on every loss; returns an
   * unsubscribe.
   */
  onChange(listener: LeadershipListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Resolves with the term once this instance leads (at once if it does); rejects if the campaign
   * stopped on an error no later round can cure (a backend refused the request itself).
   */
  whenLeader(): Promise<LockHandle> {
    const term = this.term;
    if (term) return Promise.resolve(term);
    let off: () => void = () => undefined;
    const won = new Promise<LockHandle>((resolve) => {
      off = this.onChange((leader, t) => {
        if (leader && t) {
          off();
          resolve(t);
        }
      });
    });
    return Promise.race([won, this.stopped]).finally(off);
  }

  /** Stops campaigning and gives up leadership (releases the lock). Idempotent. */
  async resign(): Promise<void> {
    this.resigned = true;
    this.cancel.abort(new Error(`leadership of "${this.name}" resigned`));
    await this.loop;
  }

  private async campaign(): Promise<void> {
    while (!this.resigned) {
      let term: LockHandle;
      try {
        term = await this.round();
      } catch (error) {
        if (this.resigned) break;
        if (unrecoverable(error)) {
          this.giveUp(error);
          break;
        }
        if (!(error instanceof LockAcquireTimeoutError))
          await pause(BACKOFF_MS, this.cancel.signal);
        continue;
      }
      this.current = term;
      this.emit(true, term);
      await untilEither(term.signal, this.cancel.signal);
      this.current = undefined;
      // Listeners learn of the loss at once, not after the release: on a cut connection the
      // release can take until the backend gives the connection up.
      this.emit(false, undefined);
      // A failed release is already logged and emitted by the engine ('releaseFailed'); the ttl
      // frees it.
      await term.release().catch(reported);
    }
  }

  /**
   * One round of waiting for the term's lock, in the backend's election layout where it has one.
   */
  private round(): Promise<LockHandle> {
    const { ttl, backend } = this.options;
    const options = { ttl, backend, wait: ROUND_MS, signal: this.cancel.signal };
    const proposal = this.options.proposal ?? `${hostname()}:${process.pid}`;
    const driver = electionDriver(this.host.backend(backend), proposal);
    return this.host.acquireOne({ key: `election:${this.name}`, options, driver });
  }

  /** Stops for good on an error every round would repeat: reported at warn, not per round. */
  private giveUp(error: unknown): void {
    this.resigned = true;
    process.emitWarning(
      `the campaign for "${this.name}" stopped: ${error instanceof Error ? error.message : String(error)}`,
      'DistributedLockWarning',
    );
    this.stop(error);
  }

  private emit(leader: boolean, term: LockHandle | undefined): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(leader, term);
      } catch (error) {
        // A listener's failure must not stop the campaign; it is reported, not swallowed.
        process.emitWarning(
          `a leadership listener of "${this.name}" threw: ${String(error)}`,
          'DistributedLockWarning',
        );
      }
    }
  }
}

/** A campaign's grant driver on `backend`: its election layout, or (none) the plain lock. */
function electionDriver(backend: LockBackend, proposal: string): GrantDriver | undefined {
  const election = backend.election;
  if (!election) return undefined;
  const { leave } = election;
  return {
    tryAcquire: (request) => election.tryAcquire(request, proposal),
    leave: leave && ((request) => leave.call(election, request)),
    holder: backend,
    reentry: '',
    manyHolders: false,
  };
}

function untilEither(a: AbortSignal, b: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (a.aborted || b.aborted) return resolve();
    const done = () => {
      a.removeEventListener('abort', done);
      b.removeEventListener('abort', done);
      resolve();
    };
    a.addEventListener('abort', done, { once: true });
    b.addEventListener('abort', done, { once: true });
  });
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}
