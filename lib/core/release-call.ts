import { MAX_DURATION_MS } from '../backend-kit/limits';
import { BackendCall, backendLabel } from './backend-call';
import type { AcquireContext } from './lock-acquirer';
import type { LockActivity } from './lock-activity';
import type { LockLease } from './lock-lease';

/**
 * A lease's release call: callBackend whose failure is reported (releaseFailed) before the caller
 * sees it, as LockActivity.releaseReporter in a `.catch` does, without that closure and promise.
 */
class ReleaseCall<T> extends BackendCall<T> {
  private readonly during: 'release' | 'lost-release';

  constructor(
    activity: LockActivity,
    backend: string,
    what: string,
    budget: number,
    private readonly lease: LockLease,
  ) {
    super(activity, backend, what, budget, lease.key, undefined);
    this.during = lease.state === 'lost' ? 'lost-release' : 'release';
  }

  protected override report(error: unknown): void {
    this.activity.releaseFailed(this.lease.backendName, this.lease.key, this.during, error);
  }
}

/**
 * The engine's release call: callBackend(...).catch(activity.releaseReporter(lease)), in one
 * object (the budget is the engine's operationTimeout).
 */
export function callRelease<T>(
  e: Pick<AcquireContext, 'activity' | 'backends' | 'operationTimeout'>,
  op: Promise<T>,
  what: string,
  lease: LockLease,
): Promise<T> {
  const budget = Math.min(e.operationTimeout, MAX_DURATION_MS);
  const label = backendLabel(e.backends, lease.backendName);
  return new ReleaseCall<T>(e.activity, label, what, budget, lease).start(op);
}
