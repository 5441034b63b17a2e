import type { BackendAcquireResult, BackendAttempt } from '../../interfaces/lock-backend.interface';
import {
  clusterSlot as keySlot,
  FENCE_LUA,
  lockKeys,
  NOW_MS_LUA,
  redisScript,
  runScript,
  type RedisClientLike,
} from '../redis-client';

/**
 * acquireAll KEYS=(W,R,F,Q,D) per lock ARGV=fenceRetention,mode,(owner,ttl) per lock
 * All or nothing: first checks every key (free for the mode, and nobody queued: a multi-key grant
 * never overtakes a waiter), then grants every key with its own fence (FENCE_LUA). Returns
 * {1, tokens...} or {0, index of the first busy key (1-based), its ms to expiry (-1 unknown)}.
 */
export const ACQUIRE_ALL = redisScript(`${FENCE_LUA}${NOW_MS_LUA}
local now = now_ms()
local retention, mode = ARGV[1], ARGV[2]
local n = #KEYS / 5
for i = 0, n - 1 do
  local W, R, Q = KEYS[i * 5 + 1], KEYS[i * 5 + 2], KEYS[i * 5 + 4]
  local wttl = redis.call('PTTL', W)
  if wttl ~= -2 then return {0, i + 1, wttl} end
  if redis.call('EXISTS', Q) == 1 then return {0, i + 1, -1} end
  if mode == 'exclusive' and redis.call('EXISTS', R) == 1 then
    redis.call('ZREMRANGEBYSCORE', R, '-inf', now)
    local last = redis.call('ZRANGE', R, -1, -1, 'WITHSCORES')
    if last[1] then return {0, i + 1, tonumber(last[2]) - now} end
  end
end
local out = {1}
for i = 0, n - 1 do
  local W, R, F = KEYS[i * 5 + 1], KEYS[i * 5 + 2], KEYS[i * 5 + 3]
  local owner, ttl = ARGV[3 + i * 2], tonumber(ARGV[4 + i * 2])
  if mode == 'exclusive' then
    redis.call('SET', W, owner, 'PX', ttl)
  else
    redis.call('ZREMRANGEBYSCORE', R, '-inf', now)
    redis.call('ZADD', R, now + ttl, owner)
    local last = redis.call('ZRANGE', R, -1, -1, 'WITHSCORES')
    redis.call('PEXPIREAT', R, tonumber(last[2]))
  end
  out[#out + 1] = fence(F, retention)
end
return out
`);

/**
 * The Redis backend's tryAcquireAll: every key in one script when they share one server: always
 * on a standalone (or Sentinel-managed) primary, on Cluster only when every key's hash tag maps to
 * one slot (else null: the engine takes them one at a time in canonical order). Mixed modes are
 * not batched (null).
 */
export async function acquireAllInOneScript(
  client: RedisClientLike,
  requests: readonly BackendAttempt[],
  fenceRetention: number,
): Promise<BackendAcquireResult[] | null> {
  const mode = requests[0]?.mode;
  if (!mode || requests.some((r) => r.mode !== mode)) return null;
  if (client.isCluster && new Set(requests.map((r) => slotOf(r.key))).size > 1) return null;
  const keys: string[] = [];
  const args: (string | number)[] = [fenceRetention, mode];
  for (const r of requests) {
    const k = lockKeys(r.key);
    keys.push(k.writer, k.readers, k.fence, k.queue, k.waiters);
    args.push(r.owner, r.ttl);
  }
  const sentAt = performance.now();
  const reply = (await runScript(client, ACQUIRE_ALL, keys.length, [...keys, ...args])) as (
    number | string
  )[];
  if (Number(reply[0]) === 1) {
    return requests.map((_, i) => ({
      acquired: true,
      fencingToken: BigInt(reply[i + 1]),
      sentAt,
    }));
  }
  const busyAt = Number(reply[1]) - 1;
  const ms = Number(reply[2]);
  return requests.map((_, i) =>
    i === busyAt && ms >= 0 ? { acquired: false, retryAfter: ms } : { acquired: false },
  );
}

/** The Redis Cluster hash slot of a lock's keys (its hash tag's: backend-kit/cluster-slot.ts). */
export function slotOf(fullKey: string): number {
  return keySlot(lockKeys(fullKey).writer);
}
