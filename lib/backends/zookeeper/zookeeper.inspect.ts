import type { LockHolderInfo, LockInspection } from '../../interfaces/lock-backend.interface';
import { ERR_NO_NODE, errorCode, zk, type ZooKeeperClientLike } from './zookeeper.client';
import { decodeLockName, isReader, PROTECTED_PREFIX, sortChildren } from './zookeeper.nodes';
import { holderMetadata, toBigInt } from '../../backend-kit';
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
  // Each holder's data (its holder identity, or what Curator/kazoo stored) and the youngest
  // holder's czxid: the reads go out together, one round trip.
  const nodes = await Promise.all(holders.map((node) => zk.read(c, `${dir}/${node}`)));
  const stat = nodes[nodes.length - 1]?.stat;
  const infos: LockHolderInfo[] = holders.map((node, i) => ({
    mode,
    metadata: { ...holderMetadata(nodes[i]?.data), node, protectedId: protectedIdOf(node) },
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

/**
 * Deletes the holder nodes of `dir` (a semaphore's: every lease); resolves how many this call
 * deleted.
 */
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

/** Lock directories checked per round trip by listHeld (their getChildren are pipelined). */
const LIST_BATCH = 64;
/** A server-sequenced node name: a contender (ours, Curator's, kazoo's). */
const SEQUENTIAL = /\d{10}$/;

/**
 * The full keys under `prefix` that are held now, at most `limit`, in key order. Every key is ONE
 * child of basePath (a `/` in a key is encoded), so the prefix's parent path is always basePath:
 * one getChildren of basePath names every lock directory (keys with a contender now, plus emptied
 * directories another client has not removed yet), the prefix is matched on the decoded names,
 * and the matching directories are checked in pipelined batches of 64 getChildren until `limit`
 * held keys are found. A directory is held when it has a sequential child (a contender: the first
 * one always holds), or, for Curator's semaphore layout, a node in its `leases` child.
 *
 * What it cannot answer: a basePath whose listing does not fit one ZooKeeper response (the
 * server's jute.maxbuffer, 1 MiB by default: some 10^4 to 10^5 directories, by name length) fails,
 * and the caller gets the error; directories whose names are not our encoding (made by another
 * tool, or nested deeper than one level, like Curator paths `/locks/a/b`) are not listed. The
 * answer is a snapshot: a key may be taken or freed right after its directory was read.
 */
export async function listHeld(
  c: ZooKeeperClientLike,
  basePath: string,
  prefix: string,
  limit: number,
): Promise<string[]> {
  const names = (await zk.children(c, basePath)) ?? [];
  const candidates: { key: string; dir: string }[] = [];
  for (const name of names) {
    const key = decodeLockName(name);
    if (key !== undefined && key.startsWith(prefix))
      candidates.push({ key, dir: `${basePath}/${name}` });
  }
  candidates.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const held: string[] = [];
  for (let i = 0; i < candidates.length && held.length < limit; i += LIST_BATCH) {
    const batch = candidates.slice(i, i + LIST_BATCH);
    const answers = await Promise.all(batch.map((x) => isHeldDirectory(c, x.dir)));
    for (let j = 0; j < batch.length && held.length < limit; j++)
      if (answers[j]) held.push(batch[j].key);
  }
  return held;
}

async function isHeldDirectory(c: ZooKeeperClientLike, dir: string): Promise<boolean> {
  const kids = (await zk.children(c, dir)) ?? [];
  if (kids.some((k) => SEQUENTIAL.test(k))) return true;
  if (!kids.includes('leases')) return false;
  return ((await zk.children(c, `${dir}/leases`)) ?? []).length > 0;
}

/** The UUID of `_c_<uuid>-...`, or '' for an unprotected node. */
function protectedIdOf(node: string): string {
  const end = PROTECTED_PREFIX.length + 36;
  return node.startsWith(PROTECTED_PREFIX) && node[end] === '-'
    ? node.slice(PROTECTED_PREFIX.length, end)
    : '';
}
