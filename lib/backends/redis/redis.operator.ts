/** The Redis lock's operator calls: inspect (with the holders' identities) and forceRelease. */
import { holderMetadata } from '../../backend-kit/holder-data';
import type { LockInspection } from '../../interfaces/lock-backend.interface';
import { HOLDERS, parseInspect, runScript, toInspection } from '../redis-client';
import type { ResolvedRedisOptions } from './redis.options';
import { FORCE_RELEASE, INSPECT, lockKeys } from './redis.scripts';

/** Holder(s) with owner and remaining ttl, the last fencing token, and the queued waiters. */
export async function inspectLock(o: ResolvedRedisOptions, key: string): Promise<LockInspection> {
  const k = lockKeys(key);
  const client = await o.source.get();
  const [reply, who] = await Promise.all([
    runScript(client, INSPECT, 4, [k.writer, k.readers, k.fence, k.queue]),
    runScript(client, HOLDERS, 1, [k.holders]) as Promise<string[]>,
  ]);
  const view = parseInspect(reply);
  const stored = new Map<string, string>();
  for (let i = 0; i + 1 < who.length; i += 2) stored.set(who[i], who[i + 1]);
  const inspection = toInspection(key, view, view.queued);
  const holders = inspection.holders.map((h) => {
    const metadata = holderMetadata(stored.get(h.owner as string));
    return metadata ? { ...h, metadata } : h;
  });
  return { ...inspection, holders };
}

/** Frees `key` whoever holds it and serves the queue's head; true when something was freed. */
export async function forceReleaseLock(o: ResolvedRedisOptions, key: string): Promise<boolean> {
  const k = lockKeys(key);
  const client = await o.source.get();
  const args = [
    k.writer,
    k.readers,
    k.fence,
    k.queue,
    k.waiters,
    k.holders,
    o.fenceRetention,
    client.isCluster ? '0' : '1',
  ];
  return Number(await runScript(client, FORCE_RELEASE, 6, args)) === 1;
}
