import { redisScript as script } from './redis.script';

/**
 * The lock scripts of the Redlock backend, run on every master (keys: see lock-keys.ts; the Redis
 * backend shares RENEW and has its own queue-aware acquire and release). Time is always the
 * server's (TIME), never a client's.
 */
/** now_ms(): the server's clock in ms (TIME), for the scripts of the Redis and Redlock backends. */
export const NOW_MS_LUA = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;
const NOW = `${NOW_MS_LUA}local now = now_ms()
`;

/**
 * Token = max(last + 1, server time in µs) at EVERY grant, the counter kept `fenceRetention` ms
 * after the last grant; `fence_number` answers a number, `fence` its decimal string. Shared by the
 * Redis backend's scripts (lock, semaphore, multi-key) and Redlock's:
 * - Redlock: the token is the largest of the granting majority's, and different majorities agree
 *   only because every master's token tracks its clock.
 * - Redis with replicas: a failover to a replica that missed the last grants (or a fence that
 *   expired) must not hand out their tokens again. The promoted replica's clock has moved on by
 *   the time the failover took, so its first token passes every lost one unless its clock is
 *   behind the old primary's by more than that (docs/guide/semantics.md states it).
 * Below 2^53 (exact in Lua's doubles) until the year 2255.
 */
export const FENCE_LUA = `
local function fence_number(F, retention)
  local f = tonumber(redis.call('GET', F) or '0') + 1
  local t = redis.call('TIME')
  local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if micros > f then f = micros end
  redis.call('SET', F, string.format('%.0f', f), 'PX', retention)
  return f
end
local function fence(F, retention)
  return string.format('%.0f', fence_number(F, retention))
end
`;
const FENCE = FENCE_LUA;

/**
 * wake_next(Q, message): wakes the earliest registered process of queue Q that still listens;
 * wake_all(Q, message): wakes every registered process (a read phase opens for all readers).
 */
const WAKE = `
local function wake_next(Q, message)
  while redis.call('EXISTS', Q) == 1 do
    local head = redis.call('ZPOPMIN', Q)
    if redis.call('PUBLISH', head[1], message) > 0 then return end
  end
end
local function wake_all(Q, message)
  for _, channel in ipairs(redis.call('ZRANGE', Q, 0, -1)) do redis.call('PUBLISH', channel, message) end
  redis.call('DEL', Q)
end
`;

/** live(Z, now): drops the lapsed marks of sorted set Z (owner -> until) and counts the rest. */
const LIVE = `
local function live(Z, now)
  redis.call('ZREMRANGEBYSCORE', Z, '-inf', now)
  return redis.call('ZCARD', Z)
end
`;

/**
 * acquire KEYS={K},{K}:r,{K}:f,{K}:q,{K}:h,{K}:hr,{K}:ww,{K}:rw,{K}:rp ARGV=owner,ttl,mode,
 * fenceRetention,channel,score,keepMs,holder,markMs,message
 * Grants the writer slot or a reader permit; returns {1, token} or {0, ms until it may be free (-1
 * unknown)}. When busy and `channel` is given (a waiting process), registers that process channel
 * in {K}:q with `score` (its first registration keeps its place), so a release wakes ONE process.
 * Phase-fair waiting (Brandenburg and Anderson's reader-writer rule): a busy waiter with `markMs`
 * > 0 marks itself for that long (each attempt renews it; its grant removes it), a writer in
 * {K}:ww, a reader in {K}:rw.
 * - While a writer's mark is live, readers are busy too, so a stream of readers cannot starve a
 *   waiting writer. A reader kept out only by a mark, on a key nobody holds, wakes the next
 *   registered process in its stead (as a release does), so the wake that freed the key reaches
 *   the writer.
 * - A writer's release that finds readers' marks opens their read phase: the marks move to {K}:rp,
 *   and every registered process is woken. Until each reader of the phase is granted (or its mark
 *   lapses), writers are busy, and readers that came later wait for the next phase. So a stream of
 *   writers cannot starve a waiting reader either, and each phase is bounded.
 * Uncontended exclusive path: EXISTS {K}:r {K}:rp, SET NX PX, and the fence. A grant
 * stores the holder's data (host, pid, instance) when `holder` is set, kept fenceRetention ms: an
 * exclusive one as {K}:h = "owner|holder", a shared one in the hash {K}:hr (see lock-keys.ts).
 */
export const ACQUIRE = script(`${FENCE}${NOW_MS_LUA}${WAKE}${LIVE}
local ttl = tonumber(ARGV[2])
local exclusive = ARGV[3] == 'exclusive'
local function busy(ms)
  if ARGV[5] ~= '' then
    redis.call('ZADD', KEYS[4], 'NX', ARGV[6], ARGV[5])
    if redis.call('PTTL', KEYS[4]) < tonumber(ARGV[7]) then redis.call('PEXPIRE', KEYS[4], ARGV[7]) end
  end
  if ARGV[9] ~= '0' then
    local M = exclusive and KEYS[7] or KEYS[8]
    redis.call('ZADD', M, now_ms() + tonumber(ARGV[9]), ARGV[1])
    local last = redis.call('ZRANGE', M, -1, -1, 'WITHSCORES')
    redis.call('PEXPIREAT', M, tonumber(last[2]))
  end
  return {0, ms}
end
if exclusive then
  if redis.call('EXISTS', KEYS[2], KEYS[9]) > 0 then
    local now = now_ms()
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
    local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
    if last[1] then return busy(tonumber(last[2]) - now) end
    if live(KEYS[9], now) > 0 then return busy(-1) end
  end
  if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ttl) then return busy(redis.call('PTTL', KEYS[1])) end
  if ARGV[9] ~= '0' then redis.call('ZREM', KEYS[7], ARGV[1]) end
else
  local wttl = redis.call('PTTL', KEYS[1])
  if wttl ~= -2 then return busy(wttl) end
  local now = now_ms()
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('EXISTS', KEYS[7]) == 1 and live(KEYS[7], now) > 0 and not redis.call('ZSCORE', KEYS[9], ARGV[1]) then
    if redis.call('EXISTS', KEYS[2]) == 0 then wake_next(KEYS[4], ARGV[10]) end
    return busy(-1)
  end
  redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', KEYS[2], tonumber(last[2]))
  if ARGV[9] ~= '0' then redis.call('ZREM', KEYS[8], ARGV[1]) end
  redis.call('ZREM', KEYS[9], ARGV[1])
end
if ARGV[8] ~= '' then
  if exclusive then redis.call('SET', KEYS[5], ARGV[1] .. '|' .. ARGV[8], 'PX', ARGV[4])
  else
    redis.call('HSET', KEYS[6], ARGV[1], ARGV[8])
    redis.call('PEXPIRE', KEYS[6], ARGV[4])
  end
end
return {1, fence(KEYS[3], ARGV[4])}
`);

/**
 * release KEYS={K},{K}:r,{K}:q,{K}:hr,{K}:ww,{K}:rw,{K}:rp ARGV=owner,mode,message,done
 * Deletes our hold only if it is ours. If processes wait, wakes the earliest registered one that
 * still listens (PUBLISH reached someone; channels nobody hears are dropped): O(1) wake-ups, and
 * no PUBLISH at all when nobody waits. A writer's release that finds readers waiting opens their
 * read phase and wakes every registered process (see ACQUIRE). A holder's release (`done` = 1)
 * also removes the owner's marks, left where a master was busy for it while others granted.
 * Returns 1 if released, 0 if it was not ours (or gone).
 */
export const RELEASE = script(`${NOW_MS_LUA}${WAKE}${LIVE}
local marks = redis.call('EXISTS', KEYS[5], KEYS[6], KEYS[7]) > 0
if marks and ARGV[4] == '1' then
  for i = 5, 7 do redis.call('ZREM', KEYS[i], ARGV[1]) end
end
if ARGV[2] == 'exclusive' then
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
  redis.call('DEL', KEYS[1])
  if marks and live(KEYS[6], now_ms()) > 0 then
    redis.call('RENAME', KEYS[6], KEYS[7])
    wake_all(KEYS[3], ARGV[3])
    return 1
  end
else
  if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return 0 end
  redis.call('HDEL', KEYS[4], ARGV[1])
  if redis.call('ZCARD', KEYS[2]) > 0 then return 1 end
end
wake_next(KEYS[3], ARGV[3])
return 1
`);

/**
 * unmark KEYS={K},{K}:q,{K}:ww,{K}:rw,{K}:rp ARGV=owner,mode,message
 * A waiter that gave up removes its mark. When no writer waits or holds any more, a writer's
 * removal wakes the next registered process (readers kept out by the mark); a reader's removal
 * that ends a read phase wakes the next (a writer kept out by it). Returns 1 if it had a mark,
 * else 0.
 */
export const UNMARK = script(`${NOW_MS_LUA}${WAKE}${LIVE}
if ARGV[2] == 'exclusive' then
  if redis.call('ZREM', KEYS[3], ARGV[1]) == 0 then return 0 end
  if redis.call('EXISTS', KEYS[3]) == 0 and redis.call('EXISTS', KEYS[1]) == 0 then
    wake_next(KEYS[2], ARGV[3])
  end
  return 1
end
local marked = redis.call('ZREM', KEYS[4], ARGV[1])
if redis.call('ZREM', KEYS[5], ARGV[1]) == 1 then
  if live(KEYS[5], now_ms()) == 0 then wake_next(KEYS[2], ARGV[3]) end
  return 1
end
return marked
`);

/**
 * renew KEYS={K},{K}:r ARGV=owner,ttl,mode
 * Extends our hold to ttl ms from now if it is still ours and unexpired; returns 1, else 0.
 */
export const RENEW = script(`
if ARGV[3] == 'exclusive' then
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
${NOW}
local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not score or tonumber(score) <= now then return 0 end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[2], tonumber(last[2]))
return 1
`);

/**
 * inspect KEYS={K},{K}:r,{K}:f,{K}:q (read-only)
 * Returns {writer owner or '', writer PTTL, {reader, ms left, ...}, last token or '', ZCARD {K}:q}.
 */
export const INSPECT = script(`
${NOW}
local readers = {}
for i, v in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf', 'WITHSCORES')) do
  if i % 2 == 1 then readers[#readers + 1] = v else readers[#readers + 1] = tostring(tonumber(v) - now) end
end
return {redis.call('GET', KEYS[1]) or '', redis.call('PTTL', KEYS[1]), readers,
  redis.call('GET', KEYS[3]) or '', redis.call('ZCARD', KEYS[4])}
`);

/**
 * forceRelease KEYS={K},{K}:r,{K}:q,{K}:h,{K}:hr ARGV=message
 * Frees the key whoever holds it (an operator's action) and wakes one waiting process like a
 * release. Returns 1 if a hold was removed, else 0. The fence is kept: tokens go on growing.
 */
export const FORCE_RELEASE = script(`${WAKE}
local removed = redis.call('DEL', KEYS[1], KEYS[2])
redis.call('DEL', KEYS[4], KEYS[5])
if removed == 0 then return 0 end
wake_next(KEYS[3], ARGV[1])
return 1
`);

/**
 * holders KEYS={K}:h,{K}:hr (read-only): {the exclusive holder's "owner|holder data" or '', the
 * shared holders' owner -> holder data, flat}; see storedHolders.
 */
export const HOLDERS = script(
  `return {redis.call('GET', KEYS[1]) or '', redis.call('HGETALL', KEYS[2])}`,
);
