import type { LockInspection, SemaphoreBackend } from '../../interfaces/lock-backend.interface';
import { runScript } from '../redis-client';
import { RedisGrants, type RedisGrantDeps } from './redis.grants';
import { SEM_INSPECT, semaphoreKeys } from './redis.semaphore-scripts';

/**
 * Native semaphores of the Redis backend (its `semaphore` extension): the lock's grant rule with a
 * holder limit of N, over a permit set `{K}:s` beside the lock's keys, in its hash slot (keys:
 * redis.semaphore-scripts.ts). The same scripts and calls as the lock (RedisGrants): an attempt
 * grants when fewer than the request's own N hold and nobody is queued ahead, else queues;
 * release and forceRelease grant the freed permits to the head waiters and PUBLISH each grant on
 * the waiter's process channel, through the lock's handoff table, so one freed permit wakes one
 * waiter, who confirms the grant with one script (a message only wakes). Every grant gets its own
 * fence token. An uncontended acquire is the short SEM_PERMIT_FREE script, an uncontended release a
 * plain ZREM.
 */
export class RedisSemaphore extends RedisGrants implements SemaphoreBackend {
  constructor(d: RedisGrantDeps) {
    super(d, true);
  }

  /** The semaphore view of `key`, or undefined when no permit is held and nobody waits for one. */
  async inspect(key: string): Promise<LockInspection | undefined> {
    const k = semaphoreKeys(key);
    const client = await this.d.o.source.get();
    const [flat, fence, queued] = (await runScript(client, SEM_INSPECT, 3, [
      k.permits,
      k.fence,
      k.queue,
    ])) as [string[], string | null, number];
    if (flat.length === 0 && Number(queued) === 0) return undefined;
    const holders = Array.from({ length: flat.length / 2 }, (_, i) => ({
      mode: 'exclusive' as const,
      owner: flat[2 * i],
      remainingTtl: Math.max(0, Math.ceil(Number(flat[2 * i + 1]))),
    }));
    return {
      key,
      held: holders.length > 0,
      mode: holders.length > 0 ? 'exclusive' : undefined,
      holders,
      fencingToken: fence ? BigInt(fence) : undefined,
      waiters: Number(queued),
    };
  }
}
