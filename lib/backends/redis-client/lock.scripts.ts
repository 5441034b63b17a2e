import { redisScript as script } from './redis.script';

/**
 * The lock scripts the Redis and Redlock backends share (keys: see lock-keys.ts). Time is always
 * the server's (TIME), never a client's. Each script states its KEYS/ARGV/return contract.
 */
const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * acquire KEYS={K},{K}:r,{K}:f ARGV=owner,ttl,mode,fenceRetention
 * Grants the writer slot or a reader seat; returns {1, token} or {0, ms until it may be free (-1 unknown)}.
 * The uncontended exclusive path is EXISTS + SET NX PX + fence: the readers' set is only read (and
 * purged by server TIME) when it exists. Token = max(last + 1, server time in microseconds):
 * strictly growing while {K}:f lives, still above every earlier token after it expired (unless the
 * server clock went back by more than its retention), and comparable across Redlock's masters.
 */
export const ACQUIRE = script(`
local ttl = tonumber(ARGV[2])
if ARGV[3] == 'exclusive' then
  if redis.call('EXISTS', KEYS[2]) == 1 then
    ${NOW}
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
    local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
    if last[1] then return {0, tonumber(last[2]) - now} end
  end
  if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ttl) then return {0, redis.call('PTTL', KEYS[1])} end
else
  local wttl = redis.call('PTTL', KEYS[1])
  if wttl ~= -2 then return {0, wttl} end
  ${NOW}
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', KEYS[2], tonumber(last[2]))
end
local t = redis.call('TIME')
local fence = tonumber(redis.call('GET', KEYS[3]) or '0') + 1
local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
if micros > fence then fence = micros end
redis.call('SET', KEYS[3], string.format('%.0f', fence), 'PX', ARGV[4])
return {1, string.format('%.0f', fence)}
`);

/**
 * release KEYS={K},{K}:r ARGV=owner,mode,channel,message
 * Deletes our hold only if it is ours; announces the release on the channel so waiters wake at once.
 * Returns 1 if released, 0 if it was not ours (or gone).
 */
export const RELEASE = script(`
if ARGV[2] == 'exclusive' then
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
  redis.call('DEL', KEYS[1])
else
  if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return 0 end
  if redis.call('ZCARD', KEYS[2]) > 0 then return 1 end
end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
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
