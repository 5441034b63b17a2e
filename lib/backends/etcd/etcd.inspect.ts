import type { LockHolderInfo, LockInspection } from '../../interfaces/lock-backend.interface';
import type { EtcdClientLike, EtcdKeyValue } from './etcd.client';
import { isContenderKey, prefixRangeEnd, SHARED_VALUE } from './etcd.keys';
import { deleteContender } from './etcd.ops';

/** One contender key of a lock, oldest first. */
export interface EtcdContenderView {
  readonly key: Buffer;
  readonly rev: bigint;
  readonly lease: string;
  readonly shared: boolean;
}

/**
 * Operator views of one lock NAME, read from its prefix `NAME/` in one range (oldest first, as
 * the lock orders them). Holders are what the lock's own rule grants: the oldest contender when
 * it is a writer (etcdctl and Go keys are writers), else every reader older than the first
 * writer. Everyone else waits. etcd stores no owner token, so a holder is named by its session
 * lease; the fencing token is the youngest holder's create revision.
 */
export async function readContenders(
  client: EtcdClientLike,
  lockPrefix: Buffer,
  deadline: number,
): Promise<EtcdContenderView[]> {
  const res = await client.kv.range(
    {
      key: lockPrefix,
      range_end: prefixRangeEnd(lockPrefix),
      sort_order: 'Ascend',
      sort_target: 'Create',
    },
    { deadline },
  );
  return res.kvs
    .filter((kv: EtcdKeyValue) => isContenderKey(kv.key, lockPrefix))
    .map((kv) => ({
      key: kv.key,
      rev: BigInt(kv.create_revision),
      lease: kv.lease,
      shared: kv.value.toString() === SHARED_VALUE,
    }));
}

/** The contenders that hold the lock, by the lock's own rule (see above). */
export function holdersOf(contenders: readonly EtcdContenderView[]): EtcdContenderView[] {
  if (contenders.length === 0) return [];
  if (!contenders[0].shared) return [contenders[0]];
  const firstWriter = contenders.findIndex((c) => !c.shared);
  return firstWriter < 0 ? [...contenders] : contenders.slice(0, firstWriter);
}

export function inspection(
  fullKey: string,
  contenders: readonly EtcdContenderView[],
): LockInspection {
  const holders = holdersOf(contenders);
  const infos: LockHolderInfo[] = holders.map((h) => ({
    mode: h.shared ? 'shared' : 'exclusive',
    metadata: {
      lease: BigInt(h.lease).toString(16),
      createRevision: h.rev.toString(),
      key: h.key.toString(),
    },
  }));
  if (holders.length === 0) return { key: fullKey, held: false, holders: [], waiters: 0 };
  return {
    key: fullKey,
    held: true,
    mode: holders[0].shared ? 'shared' : 'exclusive',
    holders: infos,
    fencingToken: holders.reduce((max, h) => (h.rev > max ? h.rev : max), 0n),
    waiters: contenders.length - holders.length,
  };
}

/** Deletes the holders' keys (each only as the incarnation read); resolves how many were deleted. */
export async function deleteHolders(
  client: EtcdClientLike,
  holders: readonly EtcdContenderView[],
  deadline: number,
): Promise<number> {
  const deleted = await Promise.all(
    holders.map((h) => deleteContender(client, h.key, h.rev, deadline)),
  );
  return deleted.filter(Boolean).length;
}
