/**
 * The acquire pipeline, owner of request -> attempt -> wait -> grant for one key: the call is
 * checked (options, key, backend, mode), a hold this context already owns is re-entered, and
 * anything else becomes an Acquisition (one attempt or a wait against a deadline) whose grant is a
 * LockLease the watchdog renews. Recipes (lib/recipes/) build on `acquire` with their own
 * GrantDriver or a grant they made; the pipeline knows none of them. One observation hook
 * (activity/observe.ts) wraps every call.
 */
import { checkLockKey } from '../../backend-kit/key-encoding';
import { MAX_KEY_LENGTH } from '../../backend-kit/limits';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { LockBackend } from '../../interfaces/lock-backend.interface';
import type { ResolvedLockOptions } from '../../interfaces/lock-options.interface';
import { observed } from '../activity/observe';
import { resolveLockOptions } from '../keys/lock-options';
import { LockHandle } from '../lease/lock-handle';
import type { LockLease } from '../lease/lock-lease';
import { Acquisition } from './acquisition';
import { newOwnerToken } from './owner-token';
import type { AcquireCall, AcquireRecord, PipelineContext } from './pipeline-context';
import { ReentrancyScopes } from './reentrancy';

export type { AcquireCall, GrantDriver, PipelineContext } from './pipeline-context';

/**
 * The registered backend `name`; InvalidLockOptionsError listing the registered names otherwise.
 */
export function findBackend(
  e: Pick<PipelineContext, 'backends' | 'backendNames'>,
  name: string,
): LockBackend {
  const backend = e.backends.get(name);
  if (!backend)
    throw new InvalidLockOptionsError(
      'backend',
      name,
      e.backendNames.map((n) => `'${n}'`).join(', '),
    );
  return backend;
}

export class AcquirePipeline {
  constructor(private readonly e: PipelineContext) {}

  /**
   * The handle of `call`'s grant; rejects with LockAcquireTimeoutError when busy at the deadline.
   */
  acquire(call: AcquireCall): Promise<LockHandle> {
    return observed(this.e, call, this);
  }

  /** Checks the call, re-enters a hold this context owns, or starts an Acquisition. */
  start(call: AcquireCall, record: AcquireRecord): Promise<LockHandle> {
    const e = this.e;
    try {
      // Synchronously, before anything else: only the acquire an owning call starts with is its
      // own.
      const scope = e.scopes.claim();
      if (e.closed)
        throw new LockBackendUnavailableError('engine', 'the lock module was shut down', {
          key: call.key,
        });
      const o = resolveLockOptions(call.options, e.defaults, e.backendNames, call.key);
      const backend = findBackend(e, o.backend);
      const fullKey = this.checkKey(call, o, backend);
      // Before any owning call ran no scope exists: no id to build, nothing to find.
      const id = e.scopes.active
        ? ReentrancyScopes.id(o.backend, fullKey + (call.driver?.reentry ?? ''))
        : '';
      const existing = id ? e.scopes.find(id) : undefined;
      if (existing) return this.reenter(call, existing, o, scope, id, backend);
      o.signal?.throwIfAborted();
      const owner = call.granted?.owner ?? newOwnerToken();
      const plan = { call, fullKey, owner, resolved: o, backend, record, scope, id };
      return new Acquisition(e, plan).start();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The full key, after the key and its length on this backend are checked; and the mode. */
  private checkKey(call: AcquireCall, o: ResolvedLockOptions, backend: LockBackend): string {
    const key = call.key;
    if (!call.keyChecked) checkLockKey(key);
    // The prefix was checked at start-up and the key just now, so the joined key is clean too (a
    // surrogate pair cannot form across them: a lone half fails either check); only its length is
    // left.
    const fullKey = this.e.keyPrefix + key;
    const maxLength = Math.min(MAX_KEY_LENGTH, backend.capabilities.maxKeyLength);
    if (fullKey.length > maxLength) checkLockKey(fullKey, maxLength);
    if (o.mode === 'shared' && !backend.capabilities.shared) {
      throw new InvalidLockOptionsError(
        'mode',
        'shared',
        `'exclusive' (backend "${o.backend}" does not support shared locks)`,
        key,
      );
    }
    return fullKey;
  }

  /** Another hold of a grant this context owns; a grant a recipe made meanwhile is given back. */
  private async reenter(
    call: AcquireCall,
    existing: LockLease,
    o: ResolvedLockOptions,
    scope: ReturnType<ReentrancyScopes['claim']>,
    id: string,
    backend: LockBackend,
  ): Promise<LockHandle> {
    if (existing.mode === 'shared' && o.mode === 'exclusive') {
      throw new InvalidLockOptionsError(
        'mode',
        'exclusive',
        `'shared': this context already holds "${call.key}" shared, and upgrading would deadlock`,
        call.key,
      );
    }
    if (call.granted) {
      const lock = { key: existing.fullKey, owner: call.granted.owner, mode: o.mode, ttl: o.ttl };
      await (call.driver?.holder ?? backend).release(lock);
    }
    existing.holds++;
    if (scope) this.e.scopes.remember(scope, id, existing);
    return new LockHandle(existing, this.e.ops);
  }
}
