/**
 * What the Redis lock's and semaphore's calls (redis.grants.ts) share: the acquire script's answer,
 * and the replicas' acknowledgements of a grant or renewal (WAIT).
 */
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { BackendLock } from '../../interfaces/lock-backend.interface';
import type { ResolvedRedisOptions } from './redis.options';

export type Phase = 'try' | 'wait' | 'recheck';

/**
 * The script answers the token (a string) when granted, else the holder's remaining ms (an
 * integer).
 */
export function attemptReply(reply: unknown): [number, string | number] {
  return typeof reply === 'string' ? [1, reply] : [0, Number(reply)];
}

export function busy(reply: [number, string | number]): { acquired: false; retryAfter?: number } {
  const pttl = Number(reply[1]);
  return { acquired: false, retryAfter: pttl >= 0 ? pttl : undefined };
}

/**
 * Cluster: the acks of the WAIT that ran with an attempt's script (runScriptThenWait), by attempt;
 * RedisGrants.granted reads those of the attempt that granted.
 */
export const clusterAcks = new WeakMap<BackendLock, number>();

/**
 * WAIT on our connection to a single primary (standalone or Sentinel-managed): it covers every
 * write this connection sent before it (the replication offset only grows), so one WAIT confirms a
 * whole renewal batch. It blocks the connection for up to `timeout` ms, which is why that should
 * stay well below the ttl. On Cluster the WAIT goes with each script instead (runScriptThenWait):
 * apart from it, it could run on another node than the one that took the write.
 */
export async function waitForReplicas(
  o: ResolvedRedisOptions,
  backendName: string,
  what: string,
  key: string,
): Promise<void> {
  const { count, timeout } = o.replicas as { count: number; timeout: number };
  const client = await o.source.get();
  if (client.isCluster || typeof client.wait !== 'function') {
    throw new LockBackendUnavailableError(
      backendName,
      client.isCluster
        ? 'option "replicas": a Cluster client WAITs with each script, not apart'
        : 'option "replicas" needs a client with WAIT (an ioredis Redis or Cluster client)',
      { key },
    );
  }
  checkAcks(o, backendName, what, key, await client.wait(count, timeout));
}

/** Throws the "only N of M replicas acknowledged" error when `acked` is short of `replicas`. */
export function checkAcks(
  o: ResolvedRedisOptions,
  backendName: string,
  what: string,
  key: string,
  acked: number,
): void {
  const { count, timeout } = o.replicas as { count: number; timeout: number };
  if (acked >= count) return;
  // Final: a waiting acquire ends with it instead of retrying (the grant was given back).
  throw new LockBackendUnavailableError(
    backendName,
    `only ${acked} of ${count} replicas acknowledged the ${what} within ${timeout} ms (option "replicas")`,
    { key, final: true },
  );
}
