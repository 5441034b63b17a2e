import { FENCE_LUA, lockKeys, NOW_MS_LUA, recentKeys, redisScript } from '../redis-client';
import { ACQUIRE, FORCE_RELEASE, RELEASE, PERMIT_WHEN_FREE } from './redis.scripts';

/**
 * The Redis backend's native semaphores (`permits: N`) run the lock's scripts (redis.scripts.ts:
 * one grant rule with a holder limit, one queue) over these keys, all in the slot of the lock's
 * hash tag `{K}` (so Redis Cluster runs them unchanged):
 *   {K}:s   permits: sorted set owner -> expiry (server ms), `~owner` ("marked") while anyone is
 *           queued; the key outlives its latest permit. The one exception is the sole permit an
 *           uncontended acquire makes: score `inf`, and it expires with the set, 1 ms before it
 *           (see PERMIT_WHEN_FREE)
 *   {K}:f   fence: the lock's own counter (a key's lock and semaphore grants share one order)
 *   {K}:sq  waiters in arrival order: sorted set owner -> arrival (server µs)
 *   {K}:sw  waiter details: hash owner -> "deadline|permits|ttl|channel"; after a handoff
 *           "=token" until the holder confirms it (recheck) or releases
 * Only the uncontended grant, the renewal and inspect have scripts of their own (below).
 */
export interface SemaphoreKeys {
  readonly permits: string;
  readonly fence: string;
  readonly queue: string;
  readonly details: string;
}

export const semaphoreKeys = recentKeys((fullKey): SemaphoreKeys => {
  const tag = lockKeys(fullKey).writer;
  return { permits: `${tag}:s`, fence: `${tag}:f`, queue: `${tag}:sq`, details: `${tag}:sw` };
});

/** The scripts of the lock, named for the semaphore (called with its four keys). */
export const SEM_ACQUIRE = ACQUIRE;
export const SEM_RELEASE = RELEASE;
export const SEM_FORCE_RELEASE = FORCE_RELEASE;

/**
 * permit when free KEYS=S,F,Q ARGV=owner,ttl,fenceRetention: the first attempt on a key not busy
 * lately (RedisGrants.attempt). Returns the token, or nil when a permit is held or someone waits
 * (then ACQUIRE runs). Half ACQUIRE's keys and arguments: 3-5 % of an uncontended cycle.
 */
export const SEM_PERMIT_FREE = redisScript(`${FENCE_LUA}
local S, F, Q = KEYS[1], KEYS[2], KEYS[3]
local owner, ttl, retention = ARGV[1], tonumber(ARGV[2]), ARGV[3]
${PERMIT_WHEN_FREE}
return false
`);

/**
 * renew KEYS=S ARGV=owner,ttl
 * Owner-checked: extends our live permit (plain or marked) to now + ttl, the set past it. Returns
 * 1, or 0 when the permit is gone. (An `inf` permit's renewal is its holder's, the only holder.)
 */
export const SEM_RENEW = redisScript(`${NOW_MS_LUA}
local S, ttl = KEYS[1], tonumber(ARGV[2])
local member = ARGV[1]
local s = redis.call('ZSCORE', S, member)
if not s then
  member = '~' .. member
  s = redis.call('ZSCORE', S, member)
end
if not s then return 0 end
local now = now_ms()
if tonumber(s) <= now then
  redis.call('ZREM', S, member)
  return 0
end
redis.call('ZADD', S, now + ttl, member)
if redis.call('PTTL', S) < ttl then redis.call('PEXPIRE', S, ttl + 1) end
return 1
`);

/**
 * inspect KEYS=S,F,Q ARGV=-
 * Returns {flat owner/ms-left pairs of live permits, last token or false, queued waiters}. Writes
 * nothing: a sole permit's ms left are the set's PTTL - 1.
 */
export const SEM_INSPECT = redisScript(`${NOW_MS_LUA}
local now = now_ms()
local flat = {}
local seats = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES')
for i = 1, #seats, 2 do
  flat[#flat + 1] = (string.gsub(seats[i], '^~', ''))
  if seats[i + 1] == 'inf' then
    flat[#flat + 1] = tostring(math.max(redis.call('PTTL', KEYS[1]) - 1, 0))
  else
    flat[#flat + 1] = tostring(tonumber(seats[i + 1]) - now)
  end
end
return {flat, redis.call('GET', KEYS[2]) or false, redis.call('ZCARD', KEYS[3])}
`);
