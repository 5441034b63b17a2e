import { sleepFor } from '../../backend-kit';
import { deleteContender } from './etcd.ops';
import type { EtcdSession } from './etcd.session';

/**
 * A contender key being deleted: `first` settles with the first attempt, `done` when it is gone.
 */
export interface Deletion {
  /** Resolves or rejects with the first attempt (what release() reports). */
  readonly first: Promise<void>;
  /**
   * Resolves once the key is gone, or its session ended (taking the key with it). Never rejects.
   */
  readonly done: Promise<void>;
}

/**
 * Deletes our contender key (only the key created at `rev`), retrying with backoff until
 * it is gone or its session ends: a leftover key would block every other contender of the lock
 * until our lease expires, which for a live session is never. `onFailure` sees each failure (the
 * local queue reports it to waiters queued behind the deletion).
 */
export function deleteUntilGone(
  session: EtcdSession,
  key: Buffer,
  rev: bigint | undefined,
  callTimeout: number,
  onFailure: (error: unknown) => void,
): Deletion {
  let settleFirst!: (error?: unknown) => void;
  const first = new Promise<void>(
    (resolve, reject) => (settleFirst = (e) => (e === undefined ? resolve() : reject(e))),
  );
  const done = (async () => {
    for (let attempt = 0, delay = 50; ; attempt++, delay = Math.min(delay * 2, 2_000)) {
      try {
        await deleteContender(session.client, key, rev, Date.now() + callTimeout);
        if (attempt === 0) settleFirst();
        return;
      } catch (error) {
        onFailure(error);
        if (attempt === 0) settleFirst(error ?? new Error('delete failed'));
        // A lost session took the key with it; otherwise retry while the process lives.
        if (!session.alive) return;
        await sleepFor(delay);
      }
    }
  })();
  return { first, done };
}
