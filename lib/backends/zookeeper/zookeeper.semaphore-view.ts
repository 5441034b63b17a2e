import { toBigInt } from '../../backend-kit';
import type { LockHolderInfo, LockInspection } from '../../interfaces/lock-backend.interface';
import {
  ERR_NO_NODE,
  errorCode,
  zk,
  type ZooKeeperClientLike,
  type ZooKeeperError,
  type ZooKeeperStat,
} from './zookeeper.client';
import { PROTECTED_PREFIX } from './zookeeper.nodes';
import { LEASE_NAME, SEMAPHORE_LEASES, SEMAPHORE_LOCKS } from './zookeeper.semaphore-nodes';

/**
 * Operator views of a semaphore path (Curator's InterProcessSemaphoreV2 layout). A lock directory
 * holds only sequential `_c_<uuid>-...<10 digits>` nodes, so a child named exactly `leases` or
 * `locks` marks a semaphore.
 */
export function isSemaphoreLayout(children: readonly string[]): boolean {
  return children.includes(SEMAPHORE_LEASES) || children.includes(SEMAPHORE_LOCKS);
}

/**
 * Holders are the `leases` children, oldest first, with their data (ours `<hostname>:<pid>`,
 * Curator's its IP unless setNodeData); as Curator's getParticipantNodes, this includes the lease
 * of a waiter that holds the `locks` mutex while it counts. Waiters are the `locks` mutex's
 * contenders (this process's and others'). The fencing token is the youngest lease's czxid.
 */
export async function inspectSemaphore(
  c: ZooKeeperClientLike,
  dir: string,
  key: string,
): Promise<LockInspection> {
  const [leases, locks] = await Promise.all([
    zk.children(c, `${dir}/${SEMAPHORE_LEASES}`),
    zk.children(c, `${dir}/${SEMAPHORE_LOCKS}`),
  ]);
  const nodes = await Promise.all(
    (leases ?? []).map((node) => readNode(c, `${dir}/${SEMAPHORE_LEASES}/${node}`, node)),
  );
  const live = nodes
    .filter((n): n is NonNullable<typeof n> => n !== null)
    .sort((a, b) => (a.czxid < b.czxid ? -1 : a.czxid > b.czxid ? 1 : 0));
  const holders: LockHolderInfo[] = live.map((n) => ({
    mode: 'exclusive',
    metadata: { node: n.node, protectedId: protectedIdOf(n.node), data: n.data },
  }));
  const waiters = locks?.length ?? 0;
  if (holders.length === 0) return { key, held: false, holders: [], waiters };
  return {
    key,
    held: true,
    mode: 'exclusive',
    holders,
    fencingToken: live[live.length - 1].czxid,
    waiters,
  };
}

/** Frees every permit: deletes all lease nodes (holders see the loss through their node watch). */
export async function deleteLeaseNodes(c: ZooKeeperClientLike, dir: string): Promise<number> {
  const leases = `${dir}/${SEMAPHORE_LEASES}`;
  const removed = await Promise.all(
    ((await zk.children(c, leases)) ?? []).map(
      (node) =>
        new Promise<boolean>((resolve, reject) =>
          c.remove(`${leases}/${node}`, -1, (e) =>
            !e ? resolve(true) : errorCode(e) === ERR_NO_NODE ? resolve(false) : reject(e),
          ),
        ),
    ),
  );
  return removed.filter(Boolean).length;
}

async function readNode(
  c: ZooKeeperClientLike,
  path: string,
  node: string,
): Promise<{ node: string; data: string; czxid: bigint } | null> {
  // Without a watcher (the driver's getData(path, callback)): an operator's look leaves no watch
  // behind.
  const getData = c.getData as unknown as (
    path: string,
    callback: (
      e: ZooKeeperError | null | undefined,
      data: Buffer | undefined,
      stat: ZooKeeperStat,
    ) => void,
  ) => void;
  return new Promise((resolve, reject) =>
    getData.call(c, path, (e, data, stat) =>
      e
        ? errorCode(e) === ERR_NO_NODE
          ? resolve(null)
          : reject(e)
        : resolve({
            node,
            data: data ? data.toString('utf8') : '',
            czxid: toBigInt(stat.czxid, 'zookeeper'),
          }),
    ),
  );
}

/** The UUID of `_c_<uuid>-lease-<seq>`, or '' for an unprotected node. */
function protectedIdOf(node: string): string {
  const end = PROTECTED_PREFIX.length + 36;
  return node.startsWith(PROTECTED_PREFIX) &&
    node.slice(end, end + 1 + LEASE_NAME.length) === `-${LEASE_NAME}`
    ? node.slice(PROTECTED_PREFIX.length, end)
    : '';
}
