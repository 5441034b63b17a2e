/** The Redis lock's operator calls: inspect (with the holders' identities) and forceRelease. */
import type { LockInspection } from '../../interfaces/lock-backend.interface';
import {
  HOLDERS,
  parseInspect,
  runScript,
  storedHolders,
  toInspection,
  withIdentities,
} from '../redis-client';
import type { ResolvedRedisOptions } from './redis.options';
import { everyLockKey, FORCE_RELEASE, INSPECT, lockKeys } from './redis.scripts';

/**
 * Holder(s) with owner, remaining ttl and identity, the last fencing token, and the queued
 * waiters.
 */
export async function inspectLock(o: ResolvedRedisOptions, key: string): Promise<LockInspection> {
  const k = lockKeys(key);
  const client = await o.source.get();
  const [reply, who] = await Promise.all([
    runScript(client, INSPECT, 4, [k.writer, k.readers, k.fence, k.queue]),
    runScript(client, HOLDERS, 2, [k.holder, k.holders]),
  ]);
  const view = parseInspect(reply);
  const inspection = toInspection(key, view, view.queued);
  return { ...inspection, holders: withIdentities(inspection.holders, storedHolders(who)) };
}

/** Frees `key` whoever holds it and serves the queue's head; true when something was freed. */
export async function forceReleaseLock(o: ResolvedRedisOptions, key: string): Promise<boolean> {
  const client = await o.source.get();
  const args = [...everyLockKey(lockKeys(key)), o.fenceRetention, client.isCluster ? '0' : '1'];
  return Number(await runScript(client, FORCE_RELEASE, 7, args)) > 0;
}
