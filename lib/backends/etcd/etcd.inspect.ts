import type { LockHolderInfo, LockInspection } from '../../interfaces/lock-backend.interface';
import type { EtcdClientLike, EtcdKeyValue } from './etcd.client';
import {
  decodeEtcdLockName,
  encodeEtcdLockName,
  isContenderKey,
  prefixRangeEnd,
  SHARED_VALUE,
} from './etcd.keys';
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

/**
 * Deletes the holders' keys (each only at the create revision read); resolves how many were
 * deleted.
 */
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

/** Keys read per page by listHeld. */
const LIST_PAGE = 256;

/** The full key a contender or permit key belongs to, or undefined for keys that are not ours. */
function ownerName(rest: string): string | undefined {
  // The s flag: a NAME may hold U+2028 and U+2029 (keys refuse only C0 controls and DEL).
  const m = /^(.+?)(?:%sem\/[0-9a-f]+_[0-9a-f]+|\/[0-9a-f]+)$/s.exec(rest);
  // Our encoded NAMEs never hold '/' (a foreign etcdctl lock `a/b` is not our key `a/b`).
  if (!m || m[1].includes('/')) return undefined;
  return m[1];
}

/**
 * Where the next page starts: past the rest of the range the last key read belongs to (its NAME's
 * lock range `NAME/` or permit range `NAME%sem/`; both hold only that NAME's keys), else just past
 * it.
 */
function pastRange(lastKey: Buffer, etcdPrefix: string): Buffer {
  const rest = lastKey.toString().slice(etcdPrefix.length);
  const name = ownerName(rest);
  if (name === undefined) return Buffer.concat([lastKey, Buffer.from([0])]);
  const sub = rest.startsWith(`${name}%sem/`) ? `${name}%sem/` : `${name}/`;
  return prefixRangeEnd(Buffer.from(etcdPrefix + sub));
}

/**
 * Full keys under `keyPrefix` that are held now (a lock or semaphore NAME with any contender:
 * the oldest contender always holds), at most `limit`, in key order. Bounded: keys-only pages of
 * LIST_PAGE, and after each page the read jumps past the rest of the last NAME's contenders, so
 * a NAME with a long queue costs one page, not its queue's length.
 */
export async function listHeld(
  client: EtcdClientLike,
  etcdPrefix: string,
  keyPrefix: string,
  limit: number,
  deadline: number,
): Promise<string[]> {
  const start = Buffer.from(etcdPrefix + encodeEtcdLockName(keyPrefix));
  const end = prefixRangeEnd(start);
  const found = new Set<string>();
  let cursor: Buffer = start;
  while (found.size < limit) {
    const res = await client.kv.range(
      { key: cursor, range_end: end, keys_only: true, limit: LIST_PAGE },
      { deadline },
    );
    for (const kv of res.kvs) {
      const name = ownerName(kv.key.toString().slice(etcdPrefix.length));
      if (name !== undefined && found.size < limit) found.add(decodeEtcdLockName(name));
    }
    if (!res.more || res.kvs.length === 0) break;
    cursor = pastRange(res.kvs[res.kvs.length - 1].key, etcdPrefix);
  }
  return [...found];
}
