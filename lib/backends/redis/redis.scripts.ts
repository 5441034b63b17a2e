import { FENCE_LUA, redisScript } from '../redis-client';
import { GRANT_KEYS, HOLDER, QUEUE } from './redis.grant-rule';

/**
 * Lua scripts of the Redis backend: ONE script set for locks and semaphores, a fair queue per key
 * with direct handoff over one grant rule (redis.grant-rule.ts). Keys (one hash slot, see
 * ../redis-client/lock-keys.ts): a lock's W={K} writer, R={K}:r readers, F={K}:f fence, Q={K}:q
 * queue (owner -> arrival, server µs), D={K}:w waiter details (owner -> "deadline|mode|ttl|
 * channel"), H={K}:h the exclusive holder's identity, HR={K}:hr the shared holders' (see HOLDER);
 * a semaphore's S={K}:s permits, the same F, Q={K}:sq, D={K}:sw (redis.semaphore-scripts.ts).
 *
 * Invariants: a waiter is in Q only while it waits (its deadline, server ms, bounds a waiter that
 * died); whenever holders leave while Q is non-empty (release, leave, forceRelease, or an attempt
 * that finds a holder expired) the same script grants the head waiters the rule admits (one
 * writer; every reader up to the next queued writer; one waiter per free permit) and PUBLISHes
 * "owner|token" on each one's own process channel. A newcomer never overtakes the queue: with Q
 * non-empty it queues (except a reader joining readers when no writer is queued ahead of it,
 * since it would not delay anyone).
 *
 * Fence: token = max(last + 1, server µs) at every grant (FENCE_LUA, shared with Redlock), F kept
 * `fenceRetention` ms after the key's last grant; a key's lock and semaphore grants share it. So
 * tokens grow strictly while F lives and the server clock does not step back, and, since a token
 * exceeds the clock only by the number of grants per µs (never >= 1), a new F (after expiry, or a
 * failover to a replica that missed the last grants) still starts above every earlier token
 * unless the clock is behind by more than the time since those grants. Cost per distinct key (for
 * the docs): F lives `fenceRetention` ms (default 1 hour) after the key's last grant; MEMORY USAGE
 * reports 56 bytes for a 14-character key name on Redis 7.0 (about 42 bytes + the key name). So
 * 1M distinct keys a day keep ~42k fence keys, ~3 MB with short names. W, R, S, Q, D vanish with
 * the holders and waiters (Q, D also expire by the waiters' deadlines).
 */
export { everyLockKey, INSPECT, lockKeys, RENEW, type LockKeys } from '../redis-client';
export { HANDOFF_CONFIRM_MS } from './redis.grant-rule';

/**
 * A semaphore's uncontended grant: neither a permit nor a waiter, granted at once as its set's only
 * permit (score inf: no clock read; the set expires in ttl + 1 ms, so the set's expiry is the
 * permit's). The full scripts give such a permit its expiry (settle) before they read a score, so
 * an `inf` permit only ever exists as the sole permit of a set that expires with it, and never
 * while anyone is queued. (An older version of this library, which does not settle, would never
 * purge such a permit: upgrade all processes that share semaphore keys together; the plain lock is
 * unaffected.)
 */
export const PERMIT_WHEN_FREE = `
if redis.call('EXISTS', S, Q) == 0 then
  redis.call('ZADD', S, 'inf', owner)
  redis.call('PEXPIRE', S, ttl + 1)
  return fence(F, retention)
end
`;

/**
 * acquire KEYS=W,R,F,Q,D,H,HR (a lock) or S,F,Q,D (a semaphore)
 * ARGV=owner,ttl,kind (mode, or permits),fenceRetention,phase,waitMs,channel,probe,holder
 * phase 'try': one attempt, never queues. 'wait': attempt, else queue (deadline now + waitMs).
 * 'recheck': a queued waiter looks again: granted by a handoff (its message only woke it, and
 * anyone can PUBLISH) or one it missed? then re-dated to ttl from now. Grantable now? else it
 * stays queued (or queues again if it was dropped). Returns the token (a string) when granted, else
 * the ms until a holder's ttl ends (an integer, negative unknown): one value, not a table, since a
 * table reply costs the client more to parse. Uncontended paths, run before the queue's functions
 * are even defined (Lua makes a chunk's local functions as it reaches them): a lock's EXISTS R Q,
 * SET NX PX, the fence; a semaphore's PERMIT_WHEN_FREE.
 */
export const ACQUIRE = redisScript(`${FENCE_LUA}${HOLDER}${GRANT_KEYS}
local owner, ttl, kind, retention, phase = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
local lean_busy = false
if phase ~= 'recheck' then
  if SEATS then
${PERMIT_WHEN_FREE}
  elseif kind == 'exclusive' and redis.call('EXISTS', R, Q) == 0 then
    if redis.call('SET', W, owner, 'NX', 'PX', ttl) then
      return hold(H, HR, kind, owner, ARGV[9], retention, fence(F, retention))
    end
    if phase == 'try' then return redis.call('PTTL', W) end
    lean_busy = true
  end
end
${QUEUE}
local waitms, channel, probe = tonumber(ARGV[6]), ARGV[7], ARGV[8]
if lean_busy then
  -- Held by a writer, nobody queued or reading: queue.
  enqueue(owner, kind, ttl, waitms, channel, now_ms())
  return redis.call('PTTL', W)
end
-- An exclusive lock's re-check reads no clock.
local now = (SEATS or kind ~= 'exclusive' or phase ~= 'recheck') and now_ms()
if SEATS then
  -- A lone seat (see SEAT_WHEN_FREE) gets its expiry, the set's less 1 ms: it can only be the
  -- set's sole seat, so it is the last one by score.
  local last = redis.call('ZRANGE', S, -1, -1, 'WITHSCORES')
  if last[2] == 'inf' then
    redis.call('ZADD', S, now + math.max(redis.call('PTTL', S) - 1, 0), last[1])
  end
end
local function granted(token)
  if SEATS then return token end
  return hold(H, HR, kind, owner, ARGV[9], retention, token)
end
local function busy()
  if SEATS then
    local first = redis.call('ZRANGE', S, 0, 0, 'WITHSCORES')
    if first[1] then return math.max(0, tonumber(first[2]) - now) end
    return -1
  end
  local t = redis.call('PTTL', W)
  if t < 0 then
    local last = redis.call('ZRANGE', R, -1, -1, 'WITHSCORES')
    if last[1] then t = tonumber(last[2]) - now end
  end
  return t
end
-- A reader joins live readers at once unless a writer waits (readers queue only behind one).
local function joins()
  if SEATS or kind ~= 'shared' or redis.call('ZSCORE', Q, owner) or redis.call('EXISTS', W) == 1
      or live(R, now) == 0 then
    return false
  end
  for _, o in ipairs(redis.call('ZRANGE', Q, 0, -1)) do
    local info = redis.call('HGET', D, o)
    if info and string.find(info, '|exclusive|', 1, true) then return false end
  end
  return true
end
if phase == 'recheck' then
  local member = mine(owner, kind, now)
  if member then
    -- Re-dated: the grant may have been made long before this attempt was sent.
    take(member, kind, now, ttl, ttl)
    local info = SEATS and redis.call('HGET', D, owner)
    if info then redis.call('HDEL', D, owner) end
    if info and string.sub(info, 1, 1) == '=' then return string.sub(info, 2) end
    return granted(redis.call('GET', F) or fence(F, retention))
  end
end
now = now or now_ms()
if redis.call('EXISTS', Q) == 1 then
  if joins() then
    take(owner, kind, now, ttl, ttl)
    return granted(fence(F, retention))
  end
  if phase ~= 'try' then
    enqueue(owner, kind, ttl, waitms, channel, now)
    local got = dispatch(owner, retention, probe)
    if got then return granted(got) end
    return busy()
  end
  -- A one-shot attempt never overtakes the queue, but serves it if a holder expired.
  dispatch('', retention, probe)
  if redis.call('EXISTS', Q) == 1 then return busy() end
end
if fits(kind, now) then
  take(owner, kind, now, ttl, ttl)
  return granted(fence(F, retention))
end
if phase ~= 'try' then enqueue(owner, kind, ttl, waitms, channel, now) end
return busy()
`);

/**
 * lock when free KEYS=W,R,F,Q,H ARGV=owner,ttl,fenceRetention,holder: the first exclusive
 * attempt on a key not found busy lately (redis.grants.ts). ACQUIRE's own uncontended path with
 * 5 keys and 4 arguments instead of 7 and 9: the token when granted, else nil (then ACQUIRE runs,
 * which serves every case).
 */
export const LOCK_FREE = redisScript(`${FENCE_LUA}${HOLDER}
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
 * release KEYS as ACQUIRE's ARGV=owner,kind,fenceRetention,probe,leaving
 * Owner-checked: drops our hold if it is ours (a permit plain or marked); with leaving='1' also our
 * queue entry (a waiter that gave up). If anyone waits, grants the queue's head waiter(s) in the
 * same step. Returns 1 if a hold of ours was released, else 0. Fast path: the release itself and
 * EXISTS Q D, before any helper is defined (with neither key there is nothing to clean up or
 * serve: D holds entries only for queued waiters and permits handed over by message).
 */
export const RELEASE = redisScript(`${GRANT_KEYS}
local owner, kind, leaving = ARGV[1], ARGV[2], ARGV[5] == '1'
local released = 0
if SEATS then
  released = redis.call('ZREM', S, owner)
  if released == 0 then released = redis.call('ZREM', S, '~' .. owner) end
elseif kind == 'exclusive' then
  if redis.call('GET', W) == owner then released = redis.call('DEL', W) end
elseif redis.call('ZREM', R, owner) == 1 then
  released = 1
  redis.call('HDEL', HR, owner)
end
if redis.call('EXISTS', Q, D) == 0 then return released end
if SEATS or leaving then redis.call('HDEL', D, owner) end
if leaving then redis.call('ZREM', Q, owner) end
if (released == 0 and not leaving) or redis.call('EXISTS', Q) == 0 then return released end
${FENCE_LUA}${QUEUE}
dispatch('', ARGV[3], ARGV[4])
return released
`);

/**
 * forceRelease KEYS as ACQUIRE's ARGV=fenceRetention,probe
 * An operator frees the key whoever holds it; the queue's head is served as after a release. The
 * fence is kept, so the old holders' tokens stay below every later one. Returns how many holds
 * (a lock's holder keys, or live permits: a sole permit is live while its set exists) were removed.
 */
export const FORCE_RELEASE = redisScript(`${FENCE_LUA}${GRANT_KEYS}${QUEUE}
local removed
if SEATS then
  removed = live(S, now_ms())
  redis.call('DEL', S)
else
  removed = redis.call('DEL', W, R)
  redis.call('DEL', H, HR)
end
if redis.call('EXISTS', Q) == 1 then dispatch('', ARGV[1], ARGV[2]) end
return removed
`);
