import { FENCE_LUA, redisScript } from '../redis-client';
import { HOLDER } from './redis.holder-scripts';

/**
 * Lua scripts of the Redis backend: a fair queue per key with direct handoff. Keys (one hash slot,
 * see ../redis-client/lock-keys.ts): W={K} writer, R={K}:r readers, F={K}:f fence, Q={K}:q queue
 * (owner -> arrival, server µs), D={K}:w waiter details (owner -> "deadline|mode|ttl|channel"),
 * H={K}:h the exclusive holder's identity, HR={K}:hr the shared holders' (see HOLDER).
 *
 * Invariants: a waiter is in Q only while it waits (its deadline, server ms, bounds a waiter that
 * died); whenever the lock becomes free while Q is non-empty (release, leave, or an attempt that
 * finds a holder expired) the same script grants the head: one writer, or every reader up to the
 * next queued writer, and PUBLISHes "owner|token" on that waiter's own process channel. A
 * newcomer never overtakes the queue: with Q non-empty it queues (except a reader joining readers
 * when no writer is queued ahead of it, since it would not delay anyone).
 *
 * Fence: token = max(last + 1, server µs) at every grant (FENCE_LUA, shared with Redlock), F kept
 * `fenceRetention` ms after the key's last grant. So tokens grow strictly while F lives and the
 * server clock does not step back, and, since a token exceeds the clock only by the number of
 * grants per µs (never >= 1), a new F (after expiry, or a failover to a replica that missed the
 * last grants) still starts above every earlier token unless the clock is behind by more than the
 * time since those grants. Cost per distinct key (for the docs): F lives `fenceRetention` ms
 * (default 1 hour) after the key's last grant; MEMORY USAGE reports 56 bytes for a 14-character
 * key name on Redis 7.0 (about 42 bytes + the key name). So 1M distinct keys a day keep ~42k fence
 * keys, ~3 MB with short names. W, R, Q, D vanish with the lock and its waiters (Q, D also expire
 * by the waiters' deadlines).
 */
export { everyLockKey, INSPECT, lockKeys, RENEW, type LockKeys } from '../redis-client';

const NOW_MS = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

const FENCE = FENCE_LUA;

/**
 * ms a handed-off grant lives on Cluster until its waiter confirms it (see dispatch): long enough
 * for the message and the confirming script on a busy network, short enough that a waiter whose
 * process died delays the next one by well under a second.
 */
export const HANDOFF_CONFIRM_MS = 500;

/** Live readers after purging expired seats: count, and the latest expiry (server ms). */
const READERS = `
local function readers(R, now)
  if redis.call('EXISTS', R) == 0 then return 0 end
  redis.call('ZREMRANGEBYSCORE', R, '-inf', now)
  return redis.call('ZCARD', R)
end
local function reader_expiry(R)
  local last = redis.call('ZRANGE', R, -1, -1, 'WITHSCORES')
  if last[1] then redis.call('PEXPIREAT', R, tonumber(last[2])) end
end
`;

/**
 * dispatch(): while the lock is free, grant the queue's head: one writer (no live readers), or
 * every reader up to the next writer. Waiters past their deadline are dropped. Each grant is
 * announced on the waiter's channel; with `probe` (standalone servers), a grant nobody received
 * (the waiter's process is gone) is undone and the next waiter served. Without it (Cluster: PUBLISH
 * counts only one node's subscribers) a grant to another waiter is provisional: it lives
 * HANDOFF_CONFIRM_MS until the waiter's re-check confirms it (ACQUIRE re-dates it to its ttl), and
 * the next waiter is told to re-check, so a dead waiter delays it by about that much. `self` is
 * the caller's own owner (its grant is returned, not announced). Returns the token granted to
 * `self`, or false.
 * Needs fence() (FENCE) defined before it. Scripts define it after their uncontended exit: Lua
 * creates a chunk's local functions as it reaches them, so the lean path pays for none of these.
 */
const DISPATCH = `${NOW_MS}${READERS}
local function dispatch(W, R, F, Q, D, retention, probe, self)
  if redis.call('EXISTS', W) == 1 then return false end
  local now = now_ms()
  local held = readers(R, now)
  local token, mine, granted_readers, provisional = nil, false, false, false
  while true do
    local head = redis.call('ZRANGE', Q, 0, 0)[1]
    if not head then break end
    local info = redis.call('HGET', D, head)
    local deadline, mode, ttl, channel
    if info then deadline, mode, ttl, channel = string.match(info, '^(%d+)|(%a+)|(%d+)|(.*)$') end
    if not deadline or tonumber(deadline) <= now then
      redis.call('ZREM', Q, head)
      redis.call('HDEL', D, head)
    else
      if mode == 'exclusive' and held > 0 then break end
      redis.call('ZREM', Q, head)
      redis.call('HDEL', D, head)
      local hold = tonumber(ttl)
      if probe ~= '1' and head ~= self and hold > ${HANDOFF_CONFIRM_MS} then
        hold = ${HANDOFF_CONFIRM_MS}
        provisional = true
      end
      if mode == 'exclusive' then
        redis.call('SET', W, head, 'PX', hold)
      else
        redis.call('ZADD', R, now + hold, head)
        granted_readers = true
      end
      token = token or fence(F, retention)
      local got = 1
      if head == self then mine = token
      elseif channel ~= '' then
        got = redis.call('PUBLISH', channel, head .. '|' .. token)
        if got == 0 and probe == '1' then
          if mode == 'exclusive' then redis.call('DEL', W) else redis.call('ZREM', R, head) end
        end
      end
      if got > 0 or probe ~= '1' then
        if mode == 'exclusive' then break end
        held = held + 1
      end
    end
  end
  if granted_readers then reader_expiry(R) end
  if provisional then
    local nxt = redis.call('ZRANGE', Q, 0, 0)[1]
    local info = nxt and redis.call('HGET', D, nxt)
    local ch = info and string.match(info, '^%d+|%a+|%d+|(.*)$')
    if ch and ch ~= '' then redis.call('PUBLISH', ch, nxt .. '|') end
  end
  return mine
end
`;

/**
 * acquire KEYS=W,R,F,Q,D,H,HR ARGV=owner,ttl,mode,fenceRetention,phase,waitMs,channel,probe,holder
 * phase 'try': one attempt, never queues. 'wait': attempt, else queue (deadline now + waitMs).
 * 'recheck': a queued waiter looks again: granted by a handoff (its message only woke it, and
 * anyone can PUBLISH) or one it missed? then re-dated to ttl from now. Grantable now? else it
 * stays queued (or queues again if it was dropped). Returns the token (a string) when granted, else
 * the ms until the holder's ttl ends (an integer, -1 unknown): one value, not a table, since a
 * table reply costs the client more to parse. Uncontended exclusive path: EXISTS R Q, SET NX PX,
 * INCR F, run before the queue's functions are even defined.
 */
export const ACQUIRE = redisScript(`${FENCE}${HOLDER}
local W, R, F, Q, D = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, ttl, mode, retention, phase = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
local H, HR, who = KEYS[6], KEYS[7], ARGV[9]
local lean_busy = false
if phase ~= 'recheck' and mode == 'exclusive' and redis.call('EXISTS', R, Q) == 0 then
  if redis.call('SET', W, owner, 'NX', 'PX', ttl) then return hold(H, HR, mode, owner, who, retention, fence(F, retention)) end
  if phase ~= 'wait' then return redis.call('PTTL', W) end
  lean_busy = true
end
${DISPATCH}
local waitms, channel, probe = tonumber(ARGV[6]), ARGV[7], ARGV[8]
local function pttl()
  local t = redis.call('PTTL', W)
  if t < 0 then
    local last = redis.call('ZRANGE', R, -1, -1, 'WITHSCORES')
    if last[1] then t = tonumber(last[2]) - now_ms() end
  end
  return t
end
local function enqueue()
  if not redis.call('ZSCORE', Q, owner) then
    local t = redis.call('TIME')
    redis.call('ZADD', Q, tonumber(t[1]) * 1000000 + tonumber(t[2]), owner)
  end
  local info = string.format('%.0f', now_ms() + waitms) .. '|' .. mode .. '|' .. ttl .. '|' .. channel
  redis.call('HSET', D, owner, info)
  local keep = waitms + 1000
  for _, k in ipairs({Q, D}) do
    if redis.call('PTTL', k) < keep then redis.call('PEXPIRE', k, keep) end
  end
end
local function join_readers()
  local now = now_ms()
  readers(R, now)
  redis.call('ZADD', R, now + ttl, owner)
  reader_expiry(R)
  return hold(H, HR, mode, owner, who, retention, fence(F, retention))
end
if lean_busy then
  enqueue()
  return redis.call('PTTL', W)
end
if phase == 'recheck' then
  local mine
  if mode == 'exclusive' then mine = redis.call('GET', W) == owner
  else
    local s = redis.call('ZSCORE', R, owner)
    mine = s and tonumber(s) > now_ms()
  end
  if mine then
    -- Re-dated: the grant may have been made long before this attempt was sent.
    if mode == 'exclusive' then redis.call('PEXPIRE', W, ttl)
    else
      redis.call('ZADD', R, now_ms() + ttl, owner)
      reader_expiry(R)
    end
    return hold(H, HR, mode, owner, who, retention, redis.call('GET', F) or fence(F, retention))
  end
end
if redis.call('EXISTS', Q) == 1 then
  -- A reader joins live readers at once unless a writer waits (readers queue only behind one).
  if mode == 'shared' and not redis.call('ZSCORE', Q, owner) and redis.call('EXISTS', W) == 0
      and readers(R, now_ms()) > 0 then
    local writer_waits = false
    for _, o in ipairs(redis.call('ZRANGE', Q, 0, -1)) do
      local info = redis.call('HGET', D, o)
      if info and string.find(info, '|exclusive|', 1, true) then
        writer_waits = true
        break
      end
    end
    if not writer_waits then return join_readers() end
  end
  if phase ~= 'try' then
    enqueue()
    local got = dispatch(W, R, F, Q, D, retention, probe, owner)
    if got then return got end
    return pttl()
  end
  -- A one-shot attempt never overtakes the queue, but serves it if the holder expired.
  dispatch(W, R, F, Q, D, retention, probe, '')
  if redis.call('EXISTS', Q) == 1 then return pttl() end
end
if mode == 'exclusive' then
  if readers(R, now_ms()) == 0 and redis.call('SET', W, owner, 'NX', 'PX', ttl) then
    return hold(H, HR, mode, owner, who, retention, fence(F, retention))
  end
elseif redis.call('EXISTS', W) == 0 then
  return join_readers()
end
if phase ~= 'try' then enqueue() end
return pttl()
`);

/**
 * lock when free KEYS=W,R,F,Q,H ARGV=owner,ttl,fenceRetention,holder: the first exclusive
 * attempt on a key not found busy lately (redis.commands.ts). ACQUIRE's own uncontended path with
 * 5 keys and 4 arguments instead of 7 and 9: the token when granted, else nil (then ACQUIRE runs,
 * which serves every case).
 */
export const LOCK_FREE = redisScript(`${FENCE}${HOLDER}
local W, R, F, Q = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if redis.call('EXISTS', R, Q) == 0 and redis.call('SET', W, ARGV[1], 'NX', 'PX', ARGV[2]) then
  return hold(KEYS[5], '', 'exclusive', ARGV[1], ARGV[4], ARGV[3], fence(F, ARGV[3]))
end
return false
`);

/**
 * release when unqueued KEYS=W,Q ARGV=owner: an exclusive release on a key whose release found
 * nobody queued lately. Ours and nobody queued: deleted, 1. Not ours: 0 (RELEASE would change
 * nothing either). Ours with waiters queued: -1, untouched (then RELEASE runs and hands it over).
 */
export const RELEASE_UNQUEUED = redisScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
redis.call('DEL', KEYS[1])
return 1
`);

/**
 * release KEYS=W,R,F,Q,D,HR ARGV=owner,mode,fenceRetention,probe,leaving
 * Owner-checked: drops our hold if it is ours; with leaving='1' also our queue entry (a waiter
 * that gave up). If anyone waits, hands the lock to the queue's head in the same step. No PUBLISH
 * when nobody waits. Returns 1 if a hold of ours was released, else 0.
 */
export const RELEASE = redisScript(`
local W, R, F, Q, D = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner = ARGV[1]
local released = 0
if ARGV[5] == '1' then
  redis.call('ZREM', Q, owner)
  redis.call('HDEL', D, owner)
end
if ARGV[2] == 'exclusive' then
  if redis.call('GET', W) == owner then
    redis.call('DEL', W)
    released = 1
  end
elseif redis.call('ZREM', R, owner) == 1 then
  released = 1
end
if released == 1 and ARGV[2] ~= 'exclusive' then redis.call('HDEL', KEYS[6], owner) end
if (released == 0 and ARGV[5] ~= '1') or redis.call('EXISTS', Q) == 0 then return released end
${FENCE}${DISPATCH}
dispatch(W, R, F, Q, D, ARGV[3], ARGV[4], '')
return released
`);

/**
 * forceRelease KEYS=W,R,F,Q,D,H,HR ARGV=fenceRetention,probe
 * An operator frees the key whoever holds it; the queue's head is served as after a release. The
 * fence is kept, so the old holder's token stays below every later one. Returns 1 if a hold was
 * removed.
 */
export const FORCE_RELEASE = redisScript(`${FENCE}${DISPATCH}
local removed = redis.call('DEL', KEYS[1], KEYS[2])
redis.call('DEL', KEYS[6], KEYS[7])
if redis.call('EXISTS', KEYS[4]) == 1 then
  dispatch(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[2], '')
end
if removed > 0 then return 1 end
return 0
`);
