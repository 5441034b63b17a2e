/**
 * LockEngine.close(): stop every acquire in flight, resign every election, tell code still running
 * under a lock that it lost it, release every held lock, stop the watchdogs and close the
 * backends' own resources.
 */
import type { PipelineContext } from './acquire/pipeline-context';
import { backendLabel, callBackend } from './acquire/backend-call';
import { reported } from './activity/observe';
import { within } from '../backend-kit/bounded';
import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';

/** What close() adds to operationTimeout for each step that talks to a server (see closeEngine). */
const CLOSE_GRACE_MS = 1_000;

/**
 * Closes once (a second call resolves at once); see LockEngine.close. Bounded whatever the servers
 * do: each resignation and each backend's close() gets operationTimeout + CLOSE_GRACE_MS, then is
 * reported as failed and left behind, so shutdown never hangs on a stopped server.
 */
export async function closeEngine(
  e: PipelineContext,
  elections: ReadonlyMap<string, { resign(): Promise<unknown> }>,
): Promise<void> {
  if (e.closed) return;
  e.closed = true;
  // Nothing is granted from here on: a wait in flight stops now, as a new acquire fails at once.
  // An attempt already on the wire may still be granted: its give-back needs the backend's client,
  // so the backends are closed only after those answers came and went back (or the budget ran out).
  const givenBack = e.activity.cancelAll(
    (a) =>
      new LockBackendUnavailableError('engine', 'the lock module was shut down', {
        key: a.callerKey,
      }),
  );
  const budget = e.operationTimeout + CLOSE_GRACE_MS;
  await Promise.all([
    within(givenBack, budget),
    ...[...elections.values()].map((election) => within(election.resign(), budget)),
  ]);
  const leases = [...e.watchdogs.values()].flatMap((w) => [...w.held]);
  // Code still running under a lock must learn that it no longer holds it.
  for (const lease of leases) lease.lose('the lock module shut down and released it');
  // Releases still retried in the background get one last attempt each, beside the held ones
  // (each within operationTimeout: close() stays within its budget).
  const retries = e.releaseRetries.stop();
  await Promise.all([
    retries,
    ...leases.map((l) =>
      l
        .release((op, what) =>
          callBackend(
            e.activity,
            op,
            backendLabel(e.backends, l.backendName),
            what,
            e.operationTimeout,
          ).catch((error: unknown) => {
            // Reported here: the lost lease's best-effort release swallows the rejection.
            e.activity.releaseFailed(l.backendName, l.key, 'shutdown', error);
            throw error;
          }),
        )
        .catch(reported),
    ),
  ]);
  for (const w of e.watchdogs.values()) w.stop();
  await Promise.all(
    [...e.backends].map(async ([name, b]) => {
      let failure: unknown;
      const closing = Promise.resolve()
        .then(() => b.close())
        .catch((error: unknown) => {
          failure = error;
          throw error;
        });
      const outcome = await within(closing, budget);
      if (outcome === 'late')
        failure = new LockBackendUnavailableError(name, `close got no answer within ${budget} ms`);
      if (outcome !== 'done') e.activity.failed(name, 'close', failure, true);
    }),
  );
}
