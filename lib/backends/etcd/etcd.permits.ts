import type { LockHolderInfo, LockInspection } from '../../interfaces/lock-backend.interface';
import type { EtcdClientLike, EtcdKeyValue, EtcdWatcherLike } from './etcd.client';
import { prefixRangeEnd } from './etcd.keys';
import { deleteContender } from './etcd.ops';

/**
 * The etcd round trips of a native semaphore (permit keys under `<NAME>%sem/`, see
 * etcdSemaphorePrefix). A permit key is `<semPrefix><lease hex>_<owner token>` on the session
 * lease, its value the requester's permits N (decimal). Rule: a permit holds when fewer than ITS
 * OWN N permit keys are older (lower create revision); the others wait in create-revision order.
 *
 * Who watches what (a release wakes O(1) waiters): a waiter with exactly N older keys (the first
 * waiter) watches deletes under the semaphore's prefix, since any delete there makes room for it;
 * a waiter with more than N older keys watches only its predecessor, for a delete (it moves up)
 * or a put: a permit that was granted after waiting rewrites its own key once ("marks" it, same
 * value, same lease, same create revision), which tells its successor that it is now the first
 * waiter. Without the mark a grant would be invisible on etcd and the successor would keep
 * watching a key that no longer moves.
 */
export interface PermitPosition {
  /** Our permit key still exists as the key we created (same create revision). */
  readonly exists: boolean;
  /** Our create revision: the fencing token. */
  readonly rev: bigint;
  readonly granted: boolean;
  /** What to watch while waiting: the prefix (first waiter) or our predecessor's key. */
  readonly watch?: { readonly prefix: Buffer } | { readonly key: Buffer };
  /** Store revision the answer was read at. */
  readonly revision: string;
}

const opts = (deadline: number) => ({ deadline });

/**
 * Older permits, youngest first, at most permits + 1 (enough to tell granted / first waiter /
 * later).
 */
function olderPermits(semPrefix: Buffer, maxRev: bigint, permits: number) {
  return {
    key: semPrefix,
    range_end: prefixRangeEnd(semPrefix),
    max_create_revision: String(maxRev),
    sort_order: 'Descend' as const,
    sort_target: 'Create' as const,
    keys_only: true,
    limit: permits + 1,
  };
}

function position(
  semPrefix: Buffer,
  older: readonly EtcdKeyValue[],
  rev: bigint,
  permits: number,
  revision: string,
): PermitPosition {
  if (older.length < permits) return { exists: true, rev, granted: true, revision };
  const watch = older.length === permits ? { prefix: semPrefix } : { key: older[0].key };
  return { exists: true, rev, granted: false, watch, revision };
}

/**
 * One txn: create our permit on the lease and read the permits older than it (ours is the
 * youngest).
 */
export async function createPermit(
  client: EtcdClientLike,
  semPrefix: Buffer,
  key: Buffer,
  leaseId: string,
  permits: number,
  deadline: number,
): Promise<PermitPosition> {
  const res = await client.kv.txn(
    {
      compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
      success: [
        { request_put: { key, value: Buffer.from(String(permits)), lease: leaseId } },
        {
          request_range: {
            ...olderPermits(semPrefix, 0n, permits + 1),
            max_create_revision: undefined,
          },
        },
      ],
      failure: [{ request_range: { key } }],
    },
    opts(deadline),
  );
  if (!res.succeeded) {
    // A retry after a lost answer: the permit is ours already; read where it stands.
    const own = res.responses[0].response_range.kvs[0];
    if (!own) return { exists: false, rev: 0n, granted: false, revision: res.header.revision };
    return permitPosition(client, semPrefix, key, BigInt(own.create_revision), permits, deadline);
  }
  const rev = BigInt(res.header.revision);
  const older = res.responses[1].response_range.kvs.filter((kv) => !kv.key.equals(key));
  return position(semPrefix, older, rev, permits, res.header.revision);
}

/** One linearizable txn: does our permit still exist at `rev`, and which permits are older? */
export async function permitPosition(
  client: EtcdClientLike,
  semPrefix: Buffer,
  key: Buffer,
  rev: bigint,
  permits: number,
  deadline: number,
): Promise<PermitPosition> {
  const res = await client.kv.txn(
    {
      success: [
        { request_range: { key, keys_only: true } },
        { request_range: olderPermits(semPrefix, rev - 1n, permits) },
      ],
    },
    opts(deadline),
  );
  const own = res.responses[0].response_range.kvs[0];
  if (!own || BigInt(own.create_revision) !== rev)
    return { exists: false, rev, granted: false, revision: res.header.revision };
  return position(
    semPrefix,
    res.responses[1].response_range.kvs,
    rev,
    permits,
    res.header.revision,
  );
}

/**
 * Rewrites our permit in place (same value and lease, so same create revision): wakes our
 * successor.
 */
export async function markPermit(
  client: EtcdClientLike,
  key: Buffer,
  rev: bigint,
  leaseId: string,
  permits: number,
  deadline: number,
): Promise<void> {
  await client.kv.txn(
    {
      compare: [{ key, target: 'Create', result: 'Equal', create_revision: String(rev) }],
      success: [{ request_put: { key, value: Buffer.from(String(permits)), lease: leaseId } }],
    },
    opts(deadline),
  );
}

/**
 * Waits for what `watch` names to change: any delete under the prefix, or a put or delete of the
 * key. Resolves 'recheck' after `fallbackMs`, on stream trouble, or when the watch was created at
 * a revision past our read (something may have happened in between: reading again is cheaper
 * than proving it did not). Never rejects.
 */
export function waitForPermitChange(
  client: EtcdClientLike,
  watch: { readonly prefix: Buffer } | { readonly key: Buffer },
  readRevision: string,
  signal: AbortSignal,
  fallbackMs: number,
): Promise<{ outcome: 'changed' | 'recheck' | 'stopped'; failure?: unknown }> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve({ outcome: 'stopped' });
    let watcher: EtcdWatcherLike | undefined;
    let done = false;
    const finish = (result: { outcome: 'changed' | 'recheck' | 'stopped'; failure?: unknown }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onStop);
      const w = watcher;
      // A failed cancel leaves a watcher etcd3 drops with its stream; nothing waits on it.
      if (w) void w.cancel().catch(() => undefined);
      resolve(result);
    };
    const onStop = () => finish({ outcome: 'stopped' });
    const timer = setTimeout(() => finish({ outcome: 'recheck' }), fallbackMs);
    signal.addEventListener('abort', onStop, { once: true });
    try {
      const builder = client.watch();
      if ('prefix' in watch) {
        watcher = builder.prefix(watch.prefix).only('delete').watcher();
      } else {
        watcher = builder.key(watch.key).watcher();
        watcher.on('put', () => finish({ outcome: 'changed' }));
      }
      watcher.on('delete', () => finish({ outcome: 'changed' }));
      let created = false;
      watcher.on('connected', (res) => {
        if (created) return;
        created = true;
        if (BigInt(res.header.revision) > BigInt(readRevision)) finish({ outcome: 'recheck' });
      });
      watcher.on('disconnected', (error) =>
        finish({ outcome: 'recheck', failure: error ?? new Error('watch stream disconnected') }),
      );
      watcher.on('error', (error) => finish({ outcome: 'recheck', failure: error }));
    } catch (error) {
      finish({ outcome: 'recheck', failure: error });
    }
  });
}

/** One permit of a semaphore, oldest first. */
export interface PermitView {
  readonly key: Buffer;
  readonly rev: bigint;
  readonly lease: string;
  readonly permits: number;
}

export async function readPermits(
  client: EtcdClientLike,
  semPrefix: Buffer,
  deadline: number,
): Promise<PermitView[]> {
  const res = await client.kv.range(
    {
      key: semPrefix,
      range_end: prefixRangeEnd(semPrefix),
      sort_order: 'Ascend',
      sort_target: 'Create',
    },
    opts(deadline),
  );
  return res.kvs.map((kv) => ({
    key: kv.key,
    rev: BigInt(kv.create_revision),
    lease: kv.lease,
    permits: Number(kv.value.toString()) || 1,
  }));
}

/** The permits that hold by the rule (fewer than their own N older permits). */
export function permitHolders(permits: readonly PermitView[]): PermitView[] {
  return permits.filter((s, i) => i < s.permits);
}

export function permitInspection(fullKey: string, permits: readonly PermitView[]): LockInspection {
  const holders = permitHolders(permits);
  if (holders.length === 0) return { key: fullKey, held: false, holders: [], waiters: 0 };
  const infos: LockHolderInfo[] = holders.map((h) => ({
    mode: 'exclusive',
    metadata: {
      lease: BigInt(h.lease).toString(16),
      createRevision: h.rev.toString(),
      key: h.key.toString(),
      permits: String(h.permits),
    },
  }));
  return {
    key: fullKey,
    held: true,
    mode: 'exclusive',
    holders: infos,
    fencingToken: holders.reduce((max, h) => (h.rev > max ? h.rev : max), 0n),
    waiters: permits.length - holders.length,
  };
}

/**
 * Deletes every permit that holds (each only at the create revision read); resolves the revisions
 * freed.
 */
export async function deletePermitHolders(
  client: EtcdClientLike,
  semPrefix: Buffer,
  deadline: number,
): Promise<Set<bigint>> {
  const holders = permitHolders(await readPermits(client, semPrefix, deadline));
  const freed = await Promise.all(
    holders.map((h) => deleteContender(client, h.key, h.rev, deadline)),
  );
  return new Set(holders.filter((_, i) => freed[i]).map((h) => h.rev));
}
