import { hostname } from 'node:os';
import {
  ERR_NO_NODE,
  errorCode,
  type ZooKeeperClientLike,
  type ZooKeeperError,
  type ZooKeeperEvent,
} from './zookeeper.client';
import type { Contender } from './zookeeper.contender';
import { sequenceOf } from './zookeeper.nodes';

/**
 * Apache Curator's InterProcessSemaphoreV2 layout, so a Java service's semaphore and ours share one
 * pool: under the semaphore path `<basePath>/<encoded key>`, `locks` is an InterProcessMutex that
 * guards acquisition and `leases` holds one EPHEMERAL_SEQUENTIAL `_c_<uuid>-lease-<seq>` node per
 * lease, whose data is the participant's (ours: `<hostname>:<pid>`; Curator's default: its IP).
 */
export const SEMAPHORE_LOCKS = 'locks';
export const SEMAPHORE_LEASES = 'leases';
export { LEASE_NAME } from './zookeeper.nodes';

/**
 * Whether the lease `ours` holds among `leases` (the directory's children): at most `permits`
 * leases were created no later than ours, by the server's sequence. Safe: of the leases that hold
 * by this rule, the k-th oldest still alive saw every older one alive when it counted, so at most
 * N hold at once; a Curator lease, counted under its mutex (every lease, at most N), holds by the
 * rule too. Live: of leases counted at once, the N oldest hold, so concurrent tries on a free
 * semaphore cannot all answer busy. A name without a lease sequence counts as older.
 */
export function leaseHolds(leases: readonly string[], ours: string, permits: number): boolean {
  const mine = sequenceOf(ours);
  let older = 0;
  for (const lease of leases) {
    const s = sequenceOf(lease);
    if (s === lease || s <= mine) older++;
  }
  return older <= permits;
}

/** The participant data of our lease nodes, as Curator's setNodeData: who holds the lease. */
export const PARTICIPANT = Buffer.from(`${hostname()}:${process.pid}`, 'utf8');

/** node-zookeeper-client's getChildren with a watcher (the contract's client type omits it). */
type ChildWatcher = {
  getChildren(
    path: string,
    watcher: (event: ZooKeeperEvent) => void,
    callback: (error: ZooKeeperError | null | undefined, children: string[]) => void,
  ): void;
};

/** getChildren with a watch; null when the directory is missing (then no watch is left behind). */
export function watchChildren(
  c: ZooKeeperClientLike,
  path: string,
  watcher: (event: ZooKeeperEvent) => void,
): Promise<string[] | null> {
  return new Promise((resolve, reject) =>
    (c as unknown as ChildWatcher).getChildren(path, watcher, (e, list) =>
      e ? (errorCode(e) === ERR_NO_NODE ? resolve(null) : reject(e)) : resolve(list),
    ),
  );
}

/** What the backend drives: a lock Contender or a SemaphoreContender. */
export type ZooKeeperContender = Pick<
  Contender,
  | 'step'
  | 'wait'
  | 'dispose'
  | 'finish'
  | 'abandoned'
  | 'kick'
  | 'session'
  | 'owner'
  | 'dir'
  | 'onOwnDeleted'
  | 'ownDeleted'
>;
