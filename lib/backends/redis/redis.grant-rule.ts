import { NOW_MS_LUA } from '../redis-client';

/**
 * The Lua of the Redis backend's one grant rule and its queue, written once for every kind of
 * grant: a lock (exclusive or shared) and a semaphore of N permits. Composed into the scripts of
 * redis.scripts.ts; see there for the keys and invariants.
 */

/**
 * ms a handed-off grant lives on Cluster until its waiter confirms it (see dispatch): long enough
 * for the message and the confirming script on a busy network, short enough that a waiter whose
 * process died delays the next one by well under a second.
 */
export const HANDOFF_CONFIRM_MS = 500;

/**
 * hold(H, HR, mode, owner, holder, retention, token): stores the grant's holder data (host, pid,
 * instance) beside the grant, in the granting script (no round trip of its own), kept `retention`
 * ms like the fence: an exclusive grant's as H={K}:h = "owner|holder" (one SET; a release leaves
 * it, inspect() reads it only while that owner holds), a shared grant's in the hash HR={K}:hr
 * (its release deletes it). Returns `token`. Nothing when `holder` is ''.
 */
export const HOLDER = `
local function hold(H, HR, mode, owner, holder, retention, token)
  if holder ~= '' then
    if mode == 'exclusive' then
      redis.call('SET', H, owner .. '|' .. holder, 'PX', retention)
    else
      redis.call('HSET', HR, owner, holder)
      redis.call('PEXPIRE', HR, retention)
    end
  end
  return token
end
`;

/**
 * The keys of a grant, named: a lock's KEYS=W,R,F,Q,D,H,HR (everyLockKey) or a semaphore's
 * KEYS=S,F,Q,D (semaphoreKeys). PERMITS tells them apart (a semaphore passes 4 keys); S is W's
 * slot.
 */
export const GRANT_KEYS = `
local SEATS = #KEYS == 4
local W, R, F, Q, D, H, HR
if SEATS then W, F, Q, D = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
else W, R, F, Q, D, H, HR = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7] end
local S = W
`;

/**
 * The holders of a grant and the rule, after GRANT_KEYS. Readers (R) and permits (S) are sorted
 * sets owner -> expiry (server ms). R expires at its latest reader (PEXPIREAT, as Redlock's scripts
 * keep it); S outlives its latest permit (PEXPIRE ttl + 1 when it would expire sooner).
 *
 * The rule (Curator's maxLeases): a request is granted while the live holders it conflicts with
 * are fewer than its limit. Exclusive: every holder conflicts, limit 1. Shared: only the writer
 * conflicts, limit 1. N permits: every permit conflicts, limit N (each request counts against its
 * own N). `kind` is the request's mode, or its N for a semaphore.
 */
const RULE = `${NOW_MS_LUA}
local function live(Z, now)
  if redis.call('EXISTS', Z) == 0 then return 0 end
  redis.call('ZREMRANGEBYSCORE', Z, '-inf', now)
  return redis.call('ZCARD', Z)
end
local function holders(kind, now)
  if SEATS then
    -- The set's size bounds the live seats: purged only when it looks full (then it is exact).
    local n = redis.call('ZCARD', S)
    if n < tonumber(kind) then return n end
    return n - redis.call('ZREMRANGEBYSCORE', S, '-inf', now)
  end
  local w = redis.call('EXISTS', W)
  if w == 1 or kind == 'shared' then return w end
  return live(R, now)
end
local function fits(kind, now)
  return holders(kind, now) < (tonumber(kind) or 1)
end
-- member holds for ms from now.
local function take(member, kind, now, ms, ttl)
  if SEATS then
    redis.call('ZADD', S, now + ms, member)
    if redis.call('PTTL', S) < ttl then redis.call('PEXPIRE', S, ttl + 1) end
  elseif kind == 'exclusive' then
    redis.call('SET', W, member, 'PX', ms)
  else
    redis.call('ZADD', R, now + ms, member)
    local last = redis.call('ZRANGE', R, -1, -1, 'WITHSCORES')
    redis.call('PEXPIREAT', R, tonumber(last[2]))
  end
end
local function untake(member, kind)
  if SEATS then redis.call('ZREM', S, member)
  elseif kind == 'exclusive' then redis.call('DEL', W)
  else redis.call('ZREM', R, member) end
end
-- The member of owner's live hold (a seat may be marked: '~' .. owner), or nil.
local function mine(owner, kind, now)
  if not SEATS and kind == 'exclusive' then
    if redis.call('GET', W) == owner then return owner end
    return nil
  end
  local member, s = owner, redis.call('ZSCORE', SEATS and S or R, owner)
  if SEATS and not s then
    member = '~' .. owner
    s = redis.call('ZSCORE', S, member)
  end
  if s and tonumber(s) > now then return member end
  return nil
end
`;

/**
 * The queue, after RULE and fence() (FENCE_LUA): Q waiters in arrival order (owner -> server µs),
 * D their details (owner -> "deadline|kind|ttl|channel"; a permit handed over: "=token" until its
 * holder confirms or releases it).
 *
 * Permits are marked while anyone is queued: the first waiter to queue marks the permits held then,
 * and every handoff grants a marked permit. So a plain `ZREM S owner` that frees a permit proves
 * nobody was owed it (the semaphore's release is that one command until it answers 0).
 *
 * dispatch(self, retention, probe): while the head waiter fits the rule, grant it (its own fence
 * token) and PUBLISH "owner|token" on its process channel; waiters past their deadline are
 * dropped. With `probe` (standalone servers), a grant nobody received (its process is gone) is
 * undone and the next waiter served. Without (Cluster: PUBLISH counts one node's subscribers), a
 * grant to another waiter is provisional: it lives HANDOFF_CONFIRM_MS until the waiter's re-check
 * confirms it (ACQUIRE re-dates it to its ttl), and the next waiter is told to re-check, so a dead
 * waiter delays it by about that much. `self` is the caller's own owner (its grant is returned,
 * not announced). Returns the token granted to `self`, or false.
 */
export const QUEUE = `${RULE}
local function entry(owner)
  local info = redis.call('HGET', D, owner)
  if info then return string.match(info, '^(%d+)|(%w+)|(%d+)|(.*)$') end
end
local function enqueue(owner, kind, ttl, waitms, channel, now)
  if SEATS and redis.call('EXISTS', Q) == 0 then
    local all = redis.call('ZRANGE', S, 0, -1, 'WITHSCORES')
    for i = 1, #all, 2 do
      if string.sub(all[i], 1, 1) ~= '~' then
        redis.call('ZREM', S, all[i])
        redis.call('ZADD', S, all[i + 1], '~' .. all[i])
      end
    end
  end
  if not redis.call('ZSCORE', Q, owner) then
    local t = redis.call('TIME')
    redis.call('ZADD', Q, tonumber(t[1]) * 1000000 + tonumber(t[2]), owner)
  end
  redis.call('HSET', D, owner, string.format('%.0f', now + waitms) .. '|' .. kind .. '|' .. ttl .. '|' .. channel)
  local keep = waitms + ttl + 1000
  for _, k in ipairs({Q, D}) do
    if redis.call('PTTL', k) < keep then redis.call('PEXPIRE', k, keep) end
  end
end
local function dispatch(self, retention, probe)
  -- A writer holds: nobody fits (a writer conflicts with every kind).
  if not SEATS and redis.call('EXISTS', W) == 1 then return false end
  local now = now_ms()
  local granted, provisional = false, false
  while true do
    local head = redis.call('ZRANGE', Q, 0, 0)[1]
    if not head then break end
    local deadline, kind, ttl, channel = entry(head)
    if not deadline or tonumber(deadline) <= now then
      redis.call('ZREM', Q, head)
      redis.call('HDEL', D, head)
    elseif not fits(kind, now) then
      break
    else
      redis.call('ZREM', Q, head)
      local ms = tonumber(ttl)
      if probe ~= '1' and head ~= self and ms > ${HANDOFF_CONFIRM_MS} then
        ms = ${HANDOFF_CONFIRM_MS}
        provisional = true
      end
      local member = SEATS and '~' .. head or head
      take(member, kind, now, ms, tonumber(ttl))
      local token = fence(F, retention)
      local kept = true
      if head == self then
        granted = token
        redis.call('HDEL', D, head)
      else
        -- A seat's confirm reads its own token here (other seats are granted meanwhile); a
        -- lock's reads the fence (no grant follows a writer's while it holds, and a reader's
        -- token need only pass every earlier writer's).
        if SEATS then redis.call('HSET', D, head, '=' .. token) else redis.call('HDEL', D, head) end
        if channel ~= '' and redis.call('PUBLISH', channel, head .. '|' .. token) == 0 and probe == '1' then
          untake(member, kind)
          redis.call('HDEL', D, head)
          kept = false
        end
      end
      -- A writer granted: nobody else fits.
      if kept and not SEATS and kind == 'exclusive' then break end
    end
  end
  if provisional then
    local nxt = redis.call('ZRANGE', Q, 0, 0)[1]
    local channel = nxt and select(4, entry(nxt))
    if channel and channel ~= '' then redis.call('PUBLISH', channel, nxt .. '|') end
  end
  return granted
end
`;
