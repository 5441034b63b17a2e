/**
 * LockEngine.close(): resign every election, tell code still running under a lock that it lost it,
 * release every held lock, stop the watchdogs and close the backends' own resources.
 */
import type { PipelineContext } from './acquire/pipeline-context';
import { backendLabel, callBackend } from './acquire/backend-call';
import { reported } from './activity/observe';

/** Closes once (a second call resolves at once); see LockEngine.close. */
export async function closeEngine(
  e: PipelineContext,
  elections: ReadonlyMap<string, { resign(): Promise<unknown> }>,
): Promise<void> {
  if (e.closed) return;
  e.closed = true;
  await Promise.all([...elections.values()].map((election) => election.resign()));
  const leases = [...e.held];
  // Code still running under a lock must learn that it no longer holds it.
  for (const lease of leases) lease.lose('the lock module shut down and released it');
  await Promise.all(
    leases.map((l) =>
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
  );
  for (const w of e.watchdogs.values()) w.stop();
  await Promise.all(
    [...e.backends].map(([name, b]) =>
      b.close().catch((error) => e.activity.failed(name, 'close', error, true)),
    ),
  );
}
