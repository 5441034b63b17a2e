import { MAX_DURATION_MS } from '../../backend-kit/limits';
import { BackendCall, backendLabel, callBackend } from '../acquire/backend-call';
import type { PipelineContext } from '../acquire/pipeline-context';
import type { LockLease } from './lock-lease';

/**
 * The engine's release call: callBackend(...) whose failure is reported
 * (activity.leaseReleaseFailed) and starts background retries (ReleaseRetries) before the caller
 * sees it, in one object (the budget is the engine's operationTimeout).
 */
export function callRelease<T>(
  e: Pick<PipelineContext, 'activity' | 'backends' | 'operationTimeout' | 'releaseRetries'>,
  op: Promise<T>,
  what: string,
  lease: LockLease,
): Promise<T> {
  const budget = Math.min(e.operationTimeout, MAX_DURATION_MS);
  const label = backendLabel(e.backends, lease.backendName);
  return new BackendCall<T>(e.activity, label, what, budget, lease.key, undefined, {
    lease,
    retries: e.releaseRetries,
  }).start(op);
}

/**
 * One background retry of a lease's release (ReleaseRetries): a plain engine call within
 * operationTimeout, outside every caller's context; its failure is not another releaseFailed.
 */
export function retryRelease(
  e: Pick<PipelineContext, 'activity' | 'backends' | 'operationTimeout' | 'detached'>,
  lease: LockLease,
): Promise<void> {
  const op = e.detached(() => lease.backendRelease());
  const label = backendLabel(e.backends, lease.backendName);
  return callBackend(e.activity, op, label, 'release', e.operationTimeout, lease.key);
}
