import { checkLockKey } from '../../backend-kit/key-encoding';
import { isPartial, markPartial, type ListAnswer } from '../../backend-kit/list-answer';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { LockBackend, LockInspection } from '../../interfaces/lock-backend.interface';
import { DEFAULT_BACKEND_NAME } from '../../distributed-lock.constants';
import type { HeldLockInfo, LockActivity, WaitingLockInfo } from './lock-activity';

export { LockActivity } from './lock-activity';
import type { LockEventBus } from './lock-events';
import type { LockLease } from '../lease/lock-lease';
import { newOwnerToken } from '../acquire/owner-token';

/** LockService.inspect(key): the backend's answer plus this process's own view of the key. */
export interface LockInspectionReport extends LockInspection {
  /** The registered backend name. */
  readonly backend: string;
  /** This process: its holds of the key (with hold times) and its acquires of it in flight. */
  readonly local: { readonly holders: readonly HeldLockInfo[]; readonly waiters: number };
}

/** The outcome of one health probe of a backend. */
export interface BackendProbeResult {
  readonly backend: string;
  /** The backend kind ('redis', ...). */
  readonly kind: string;
  readonly status: 'up' | 'down';
  /**
   * How the round trip was made: the backend's ping(), inspect() of a probe key, or tryAcquire +
   * release.
   */
  readonly via: 'ping' | 'inspect' | 'acquire';
  readonly latencyMs: number;
  /** Why it is down (the error's message: may carry the driver's text, addresses included). */
  readonly reason?: string;
  /** The error's code when it has one (`LOCK_BACKEND_UNAVAILABLE`, ...). */
  readonly code?: string;
}

/** What the operator functions need from the engine. */
export interface LockOperatorHost {
  readonly keyPrefix: string;
  readonly events: LockEventBus;
  readonly activity: LockActivity;
  readonly backendNames: readonly string[];
  backend(name: string): LockBackend;
  heldLeases(): Iterable<LockLease>;
  /**
   * One backend call bounded by the operation timeout, failures wrapped (and tracked) as the engine
   * does.
   */
  call<T>(op: Promise<T>, backend: string, what: string, key?: string): Promise<T>;
}

/**
 * Operator actions over the engine's backends: inspect, forceRelease, list, and health probes.
 * Each asks the backend's optional contract method and fails with InvalidLockOptionsError naming
 * the backend when it has none (a capability missing is said, never faked). forceRelease is safe
 * for correctness because of fencing: the old holder's next renewal finds the lock gone and its
 * handle's signal aborts; its writes carry an older token than the next holder's.
 */
export class LockOperator {
  constructor(private readonly host: LockOperatorHost) {}

  /**
   * Locks held through this engine now, with hold times (tracked while someone listens to events).
   */
  heldLocks(): HeldLockInfo[] {
    const now = performance.now();
    return [...this.host.heldLeases()].map((lease) => this.host.activity.describe(lease, now));
  }

  /** Keys with acquires in flight in this process, and how many. */
  waitingLocks(): WaitingLockInfo[] {
    return this.host.activity.waitingLocks();
  }

  /** The backend's inspect() of `key` plus this process's holds and waiters of it. */
  async inspect(key: string, backendName = DEFAULT_BACKEND_NAME): Promise<LockInspectionReport> {
    const { backend, fullKey } = this.target(key, backendName, 'inspect');
    const answer = await this.host.call(
      (backend.inspect as (k: string) => Promise<LockInspection>).call(backend, fullKey),
      backendName,
      'inspect',
      key,
    );
    const holders = [...this.host.heldLeases()].filter(
      (l) => l.backendName === backendName && l.fullKey === fullKey,
    );
    const now = performance.now();
    return {
      ...answer,
      backend: backendName,
      local: {
        holders: holders.map((l) => this.host.activity.describe(l, now)),
        waiters: this.host.activity.waitingFor(backendName, key),
      },
    };
  }

  /** Frees `key` whoever holds it (the backend's forceRelease()); emitted as 'forceReleased'. */
  async forceRelease(key: string, backendName = DEFAULT_BACKEND_NAME): Promise<boolean> {
    const { backend, fullKey } = this.target(key, backendName, 'forceRelease');
    const freed = await this.host.call(
      (backend.forceRelease as (k: string) => Promise<boolean>).call(backend, fullKey),
      backendName,
      'forceRelease',
      key,
    );
    if (this.host.events.active)
      this.host.events.emit({
        type: 'forceReleased',
        at: Date.now(),
        backend: backendName,
        key,
        freed,
      });
    return freed;
  }

  /**
   * Keys (without keyPrefix) under `prefix` held now, where the backend can list. Marked
   * `partial: true` (isPartial) when the backend's own bound ended its walk early.
   */
  async list(prefix = '', backendName = DEFAULT_BACKEND_NAME, limit = 1_000): Promise<ListAnswer> {
    const backend = this.host.backend(backendName);
    if (typeof backend.list !== 'function') throw unsupported(backendName, backend, 'list');
    checkListArguments(prefix, limit);
    const full = this.host.keyPrefix + prefix;
    if (full.length > 0) checkLockKey(full, backend.capabilities.maxKeyLength);
    const keys = await this.host.call(backend.list(full, limit), backendName, 'list');
    const out = keys
      .filter((k) => k.startsWith(this.host.keyPrefix))
      .map((k) => k.slice(this.host.keyPrefix.length));
    // A backend whose bound cut its walk short says so; the caller learns it too.
    return isPartial(keys) ? markPartial(out) : out;
  }

  /**
   * One real round trip per backend (all registered ones when `names` is omitted); never throws.
   */
  probe(names: readonly string[] = this.host.backendNames): Promise<BackendProbeResult[]> {
    return Promise.all(names.map((name) => this.probeOne(name)));
  }

  private async probeOne(name: string): Promise<BackendProbeResult> {
    const backend = this.host.backend(name);
    const probeKey = `${this.host.keyPrefix}health-probe`;
    const via =
      typeof backend.ping === 'function'
        ? 'ping'
        : typeof backend.inspect === 'function'
          ? 'inspect'
          : 'acquire';
    const startedAt = performance.now();
    try {
      if (via === 'ping')
        await this.host.call((backend.ping as () => Promise<void>).call(backend), name, 'ping');
      else if (via === 'inspect')
        await this.host.call(
          (backend.inspect as (k: string) => Promise<unknown>).call(backend, probeKey),
          name,
          'inspect',
        );
      else await this.acquireProbe(backend, name, probeKey);
      return {
        backend: name,
        kind: backend.name,
        status: 'up',
        via,
        latencyMs: Math.round(performance.now() - startedAt),
      };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      const code = (error as { code?: unknown } | undefined)?.code;
      return {
        ...(typeof code === 'string' ? { code } : {}),
        backend: name,
        kind: backend.name,
        status: 'down',
        via,
        latencyMs: Math.round(performance.now() - startedAt),
        reason,
      };
    }
  }

  /** A busy answer is a round trip too: another replica's probe may hold the key. */
  private async acquireProbe(backend: LockBackend, name: string, key: string): Promise<void> {
    const lock = {
      key,
      owner: newOwnerToken(),
      mode: 'exclusive' as const,
      ttl: Math.max(backend.capabilities.minTtl ?? 0, 5_000),
    };
    const attempt = { ...lock, signal: new AbortController().signal, onLost: () => undefined };
    const result = await this.host.call(backend.tryAcquire(attempt), name, 'health probe');
    if (result.acquired) await this.host.call(backend.release(lock), name, 'health probe release');
  }

  private target(key: string, backendName: string, method: 'inspect' | 'forceRelease') {
    const backend = this.host.backend(backendName);
    if (typeof backend[method] !== 'function') throw unsupported(backendName, backend, method);
    checkLockKey(key);
    const fullKey = checkLockKey(this.host.keyPrefix + key, backend.capabilities.maxKeyLength);
    return { backend, fullKey };
  }
}

/** The most keys one list() returns. */
export const MAX_LIST_LIMIT = 10_000;

/** list()'s prefix is a key's beginning ('' for all) and its limit an integer 1..MAX_LIST_LIMIT. */
function checkListArguments(prefix: unknown, limit: unknown): void {
  if (typeof prefix !== 'string')
    throw new InvalidLockOptionsError('prefix', prefix, 'a string (the beginning of a key, or "")');
  if (prefix !== '') checkLockKey(prefix);
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT)
    throw new InvalidLockOptionsError('limit', limit, `an integer from 1 to ${MAX_LIST_LIMIT}`);
}

function unsupported(name: string, backend: LockBackend, method: string): InvalidLockOptionsError {
  return new InvalidLockOptionsError(
    'backend',
    name,
    `a backend that implements ${method}() (backend "${name}" is ${backend.name}, which does not)`,
  );
}
