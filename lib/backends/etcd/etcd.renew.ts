import type { BackendLock } from '../../interfaces/lock-backend.interface';
import type { EtcdClientLike } from './etcd.client';
import { verifyContenders } from './etcd.ops';
import type { EtcdSemaphores } from './etcd.semaphore';
import type { LocalQueue } from './etcd.local-queue';

/**
 * The watchdog's batch renewal: locks (and permits) live as long as the session, so renewing one
 * verifies, in one transaction for the whole batch, that its key still exists as the key
 * we created (create revision and lease). A missing key is a lost lock, reported to its holders.
 */
export async function renewHeld(
  locks: readonly BackendLock[],
  queues: ReadonlyMap<string, LocalQueue>,
  semaphores: EtcdSemaphores,
  callTimeout: number,
  /** true: every lock is a semaphore's permit. */
  permits = false,
): Promise<boolean[]> {
  const results = locks.map(() => false);
  const items: { i: number; key: Buffer; rev: bigint; leaseId: string; lose: () => void }[] = [];
  let client: EtcdClientLike | undefined;
  const lost = 'its etcd key was deleted or replaced behind its back';
  locks.forEach((lock, i) => {
    // The local validity check runs before any request: a paused process finds out here, not from
    // etcd.
    if (permits) {
      const permit = semaphores.heldBy(lock);
      if (!permit?.session.alive) return;
      client = permit.session.client;
      const lose = () => semaphores.lost(permit, lost);
      items.push({ i, key: permit.key, rev: permit.rev, leaseId: permit.session.id, lose });
      return;
    }
    const queue = queues.get(lock.key);
    const held = queue?.heldBy(lock.owner);
    if (!queue || !held?.session.alive) return;
    client = held.session.client;
    const lose = () => queue.lost(lost, undefined, held.rev);
    items.push({ i, key: held.key, rev: held.rev, leaseId: held.session.id, lose });
  });
  if (!client) return results;
  // Every session of this backend is on its one client.
  const ok = await verifyContenders(client, items, Date.now() + callTimeout);
  items.forEach((it, j) => {
    if (ok[j]) results[it.i] = true;
    else it.lose();
  });
  return results;
}
