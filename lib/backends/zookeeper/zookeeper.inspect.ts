import type { LockHolderInfo, LockInspection } from '../../interfaces/lock-backend.interface';
import { ERR_NO_NODE, errorCode, zk, type ZooKeeperClientLike } from './zookeeper.client';
import { isReader, PROTECTED_PREFIX, sortChildren } from './zookeeper.nodes';
import { toBigInt } from '../../backend-kit';
import { deleteLeaseNodes, inspectSemaphore, isSemaphoreLayout } from './zookeeper.semaphore-view';

/**
 * Operator views of one lock directory (Curator's layout), from one listing: the holders are what
 * Curator's predicates grant (the first node when it is a mutex/writer node, else every reader
 * before the first writer), everyone else waits. A node is named by its protected id (`_c_<id>-`,
 * our owner token laid out as a UUID, or Curator's random one); the fencing token is the youngest
 * holder's czxid.
 */
export async function holderNodes(
  c: ZooKeeperClientLike,
  dir: string,
): Promise<{ sorted: string[]; holders: string[] }> {
  const sorted = sortChildren((await zk.children(c, dir)) ?? []);
  if (sorted.length === 0) return { sorted, holders: [] };
  if (!isReader(sorted[0])) return { sorted, holders: [sorted[0]] };
  const firstWriter = sorted.findIndex((n) => !isReader(n));
  return { sorted, holders: firstWriter < 0 ? sorted : sorted.slice(0, firstWriter) };
}

export async function inspectDirectory(
  c: ZooKeeperClientLike,
  dir: string,
  key: string,
): Promise<LockInspection> {
  const { sorted, holders } = await holderNodes(c, dir);
  if (isSemaphoreLayout(sorted)) return inspectSemaphore(c, dir, key);
  if (holders.length === 0) return { key, held: false, holders: [], waiters: 0 };
  const mode = isReader(holders[0]) ? 'shared' : 'exclusive';
  // The youngest holder's czxid (pipelined with nothing else: one round trip).
  const stat = await zk.exists(c, `${dir}/${holders[holders.length - 1]}`);
  const infos: LockHolderInfo[] = holders.map((node) => ({
    mode,
    metadata: { node, protectedId: protectedIdOf(node) },
  }));
  return {
    key,
    held: true,
    mode,
    holders: infos,
    fencingToken: stat ? toBigInt(stat.czxid, 'zookeeper') : undefined,
    waiters: sorted.length - holders.length,
  };
}

/** Deletes the holder nodes of `dir` (a semaphore's: every lease); resolves how many this call deleted. */
export async function deleteHolderNodes(c: ZooKeeperClientLike, dir: string): Promise<number> {
  const { sorted, holders } = await holderNodes(c, dir);
  if (isSemaphoreLayout(sorted)) return deleteLeaseNodes(c, dir);
  const removed = await Promise.all(
    holders.map(
      (node) =>
        new Promise<boolean>((resolve, reject) =>
          c.remove(`${dir}/${node}`, -1, (e) =>
            !e ? resolve(true) : errorCode(e) === ERR_NO_NODE ? resolve(false) : reject(e),
          ),
        ),
    ),
  );
  return removed.filter(Boolean).length;
}

/** The UUID of `_c_<uuid>-...`, or '' for an unprotected node. */
function protectedIdOf(node: string): string {
  const end = PROTECTED_PREFIX.length + 36;
  return node.startsWith(PROTECTED_PREFIX) && node[end] === '-'
    ? node.slice(PROTECTED_PREFIX.length, end)
    : '';
}
