/** The Redis lock's inspect, with the holders' identities (forceRelease: redis.grants.ts). */
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
import { INSPECT, lockKeys } from './redis.scripts';

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
