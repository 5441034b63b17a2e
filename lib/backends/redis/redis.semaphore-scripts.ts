import { FENCE_LUA, lockKeys, recentKeys, redisScript } from '../redis-client';
import { HANDOFF_CONFIRM_MS } from './redis.scripts';

/**
 * Lua scripts of the Redis backend's native semaphores (`permits: N`). Keys, all in the slot of
 * the lock's hash tag `{K}` (so Redis Cluster runs them unchanged):
 *   {K}:s   seats: sorted set owner -> expiry (server ms); the key outlives its latest seat.
 *           The one exception is the sole seat an uncontended acquire makes: score `inf`, and
 *           it expires with the set, 1 ms before it (see "Lone seats")
 *   {K}:f   fence: the lock's own counter (a key's lock and semaphore grants share one order)
 *   {K}:sq  waiters in arrival order: sorted set owner -> arrival (server µs)
 *   {K}:sw  waiter details: hash owner -> "deadline|permits|ttl|channel"; after a handoff
 *           "=token" until the holder confirms it (recheck) or releases
 *
 * Invariants: a request is granted only while fewer than ITS OWN permits hold a live seat
 * (Curator's rule); a newcomer never overtakes a queued waiter; whenever seats are freed while
 * waiters are queued (release, leave, expiry found by an attempt, forceRelease) the same script
 * grants the head waiters, one per free seat, each with its own token, and PUBLISHes
 * "owner|token" on that waiter's process channel, so one freed seat wakes exactly one waiter.
 *
 * Marked seats: a seat's member is its owner, or `~owner` ("marked"). While anyone is queued,
 * every seat is marked: the script that queues the first waiter marks the seats held then, and a
 * seat granted while waiters remain (every handoff) is made marked. A plain `ZREM S owner` that
 * removes a seat therefore proves nobody was queued, so nobody was owed that seat: the release
 * is that one command (no script) unless it answers 0 (a marked seat, or a seat already gone),
 * and then the release script runs, which finds either form and serves the queue. Owners are our
 * own hex tokens, so no owner starts with `~`.
 *
 * Lone seats: the uncontended acquire (SEAT_WHEN_FREE: no seat, nobody queued) reads no clock.
 * Its seat is the set's only one, so the set's own expiry (PEXPIRE ttl + 1) is the seat's; it
 * scores the seat `inf` instead of now + ttl (no TIME and no arithmetic on its reply
 * on the server). The full acquire script calls settle() first, which gives such a seat its
 * expiry (now + PTTL - 1) before it reads a score, purges, marks, queues or adds a seat: so an
 * `inf` seat only ever exists as the sole seat of a set that expires with it, and while anyone is
 * queued there is none. The other scripts need no settle(): renew rewrites its own seat's score
 * (an `inf` seat's renewal is its holder's, the only holder), release serves the queue only
 * while one exists, inspect reads an `inf` seat's ms left off PTTL, and forceRelease counts it
 * as live before it deletes the set. (An older version
 * of this library, which does not settle, would never purge such a seat: it would live on as
 * long as that version's other holders kept the set alive. Upgrade all processes that share
 * semaphore keys together; the plain lock is unaffected.)
 */
export interface SemaphoreKeys {
  readonly seats: string;
  readonly fence: string;
  readonly queue: string;
  readonly details: string;
}

export const semaphoreKeys = recentKeys((fullKey): SemaphoreKeys => {
  const tag = lockKeys(fullKey).writer;
  return { seats: `${tag}:s`, fence: `${tag}:f`, queue: `${tag}:sq`, details: `${tag}:sw` };
});

/**
 * The next fencing token of F, as a number: max(last + 1, server µs) at every grant (FENCE_LUA,
 * shared with the lock: a key's lock and semaphore grants share one order).
 */
const FENCE = `${FENCE_LUA}
local fence = fence_number
`;

/**
 * The slow paths' helpers. The scripts run their uncontended path before these definitions, so
 * that path makes none of their closures (Redis runs a script's whole body on every call).
 */
const COMMON = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- A lone seat (score inf; see "Lone seats") gets its expiry: the set's, less 1 ms. It
-- can only be the set's sole seat, so it is the last one by score.
local function settle(S, now)
  local last = redis.call('ZRANGE', S, -1, -1, 'WITHSCORES')
  if last[2] == 'inf' then
    redis.call('ZADD', S, now + math.max(redis.call('PTTL', S) - 1, 0), last[1])
  end
end
local function live(S, now)
  redis.call('ZREMRANGEBYSCORE', S, '-inf', now)
  return redis.call('ZCARD', S)
end
-- Live seats when fewer than 'permits' matter: the set's size bounds them, so expired seats are
-- purged only when the set looks full (then the count is exact).
local function below(S, now, permits)
  local n = redis.call('ZCARD', S)
  if n < permits then return n end
  return n - redis.call('ZREMRANGEBYSCORE', S, '-inf', now)
end
-- The set must outlive its latest seat (expiry = now + ttl). When its own expiry comes sooner,
-- PEXPIRE ttl + 1 moves it past both that seat and the old expiry (it only ever moves later).
-- fresh: the set did not exist (no expiry to read).
local function seat(S, owner, expiry, ttl, fresh)
  redis.call('ZADD', S, expiry, owner)
  if fresh or redis.call('PTTL', S) < ttl then redis.call('PEXPIRE', S, ttl + 1) end
end
-- Our seat's member (owner or '~' .. owner) and its expiry; nil when we hold no seat.
local function find_seat(S, owner)
  local s = redis.call('ZSCORE', S, owner)
  if s then return owner, s end
  local marked = '~' .. owner
  s = redis.call('ZSCORE', S, marked)
  if s then return marked, s end
  return nil
end
-- The first waiter is about to queue: mark every seat (see "Marked seats" above).
local function mark_seats(S)
  local all = redis.call('ZRANGE', S, 0, -1, 'WITHSCORES')
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 1) ~= '~' then
      redis.call('ZREM', S, all[i])
      redis.call('ZADD', S, all[i + 1], '~' .. all[i])
    end
  end
end
-- dispatch: grant queued waiters in arrival order while the head finds a free seat (by its own
-- permits); drop waiters past their deadline; with probe (standalone), a grant whose PUBLISH
-- reached nobody is undone; without (Cluster), another waiter's seat is provisional until its
-- re-check confirms it, and the next waiter is told to re-check (as the lock's dispatch). Returns
-- the token granted to self, or false.
local function dispatch(S, F, Q, D, retention, probe, self)
  local now = now_ms()
  local held = live(S, now)
  local mine, provisional = false, false
  while true do
    local head = redis.call('ZRANGE', Q, 0, 0)[1]
    if not head then break end
    local info = redis.call('HGET', D, head)
    local deadline, permits, ttl, channel
    if info then deadline, permits, ttl, channel = string.match(info, '^(%d+)|(%d+)|(%d+)|(.*)$') end
    if not deadline or tonumber(deadline) <= now then
      redis.call('ZREM', Q, head)
      redis.call('HDEL', D, head)
    else
      if held >= tonumber(permits) then break end
      redis.call('ZREM', Q, head)
      local hold = tonumber(ttl)
      if probe ~= '1' and head ~= self and hold > ${HANDOFF_CONFIRM_MS} then
        hold = ${HANDOFF_CONFIRM_MS}
        provisional = true
      end
      seat(S, '~' .. head, now + hold, tonumber(ttl), false)
      local token = fence(F, retention)
      local got = 1
      if head == self then
        mine = token
        redis.call('HDEL', D, head)
      else
        token = string.format('%.0f', token)
        redis.call('HSET', D, head, '=' .. token)
        if channel ~= '' then got = redis.call('PUBLISH', channel, head .. '|' .. token) end
        if got == 0 and probe == '1' then
          redis.call('ZREM', S, '~' .. head)
          redis.call('HDEL', D, head)
        end
      end
      if got > 0 or probe ~= '1' then held = held + 1 end
    end
  end
  if provisional then
    local nxt = redis.call('ZRANGE', Q, 0, 0)[1]
    local info = nxt and redis.call('HGET', D, nxt)
    local ch = info and string.match(info, '^%d+|%d+|%d+|(.*)$')
    if ch and ch ~= '' then redis.call('PUBLISH', ch, nxt .. '|') end
  end
  return mine
end
`;

/**
 * The uncontended grant (SEM_SEAT_FREE, SEM_ACQUIRE): neither a seat nor a waiter, seat at once,
 * as a lone seat (score inf; the set expires in ttl + 1 ms: see "Lone seats").
 */
const SEAT_WHEN_FREE = `
if redis.call('EXISTS', S, Q) == 0 then
  redis.call('ZADD', S, 'inf', owner)
  redis.call('PEXPIRE', S, ttl + 1)
  return fence(F, retention)
end
`;

/**
 * seat when free KEYS=S,F,Q ARGV=owner,ttl,fenceRetention: the first attempt on a key not busy
 * lately (RedisSemaphore.attempt). Returns the token, or 0 when a seat is held or someone waits
 * (then SEM_ACQUIRE runs). Half SEM_ACQUIRE's keys and arguments: 3-5 % of an uncontended cycle.
 */
export const SEM_SEAT_FREE = redisScript(`${FENCE}
local S, F, Q = KEYS[1], KEYS[2], KEYS[3]
local owner, ttl, retention = ARGV[1], tonumber(ARGV[2]), ARGV[3]
${SEAT_WHEN_FREE}
return 0
`);

/**
 * acquire KEYS=S,F,Q,D ARGV=owner,ttl,permits,fenceRetention,phase,waitMs,channel,probe
 * phase 'try': one attempt, never queues; 'wait': attempt, else queue (deadline now + waitMs);
 * 'recheck': a queued waiter looks again (granted by a handoff, whose message only woke it, or
 * one it missed? then re-dated to ttl from now; a seat free now?).
 * Returns an integer: the token (> 0) when granted; else 0 - (ms until the earliest seat expires
 * + 1), or 0 when that is unknown (semaphoreReply reads it). Uncontended path (no seat held,
 * nobody queued): EXISTS S Q, ZADD S (a lone seat), PEXPIRE S, INCR F, before any helper is
 * defined.
 */
export const SEM_ACQUIRE = redisScript(`${FENCE}
local S, F, Q, D = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, ttl, retention, phase = ARGV[1], tonumber(ARGV[2]), ARGV[4], ARGV[5]
if phase ~= 'recheck' then
${SEAT_WHEN_FREE}
end
${COMMON}
local now = now_ms()
settle(S, now)
local permits, waitms, channel, probe = tonumber(ARGV[3]), tonumber(ARGV[6]), ARGV[7], ARGV[8]
local function busy()
  local first = redis.call('ZRANGE', S, 0, 0, 'WITHSCORES')
  if first[1] then return -1 - math.max(0, tonumber(first[2]) - now) end
  return 0
end
local function enqueue()
  if redis.call('EXISTS', Q) == 0 then mark_seats(S) end
  if not redis.call('ZSCORE', Q, owner) then
    local t = redis.call('TIME')
    redis.call('ZADD', Q, tonumber(t[1]) * 1000000 + tonumber(t[2]), owner)
  end
  redis.call('HSET', D, owner, string.format('%.0f', now + waitms) .. '|' .. permits .. '|' .. ttl .. '|' .. channel)
  local keep = waitms + ttl + 1000
  for _, k in ipairs({Q, D}) do
    if redis.call('PTTL', k) < keep then redis.call('PEXPIRE', k, keep) end
  end
end
if phase == 'recheck' then
  local mine, s = find_seat(S, owner)
  if mine and tonumber(s) > now then
    -- Re-dated: the grant may have been made long before this attempt was sent.
    seat(S, mine, now + ttl, ttl, false)
    local info = redis.call('HGET', D, owner)
    redis.call('HDEL', D, owner)
    if info and string.sub(info, 1, 1) == '=' then return tonumber(string.sub(info, 2)) end
    local current = redis.call('GET', F)
    if current then return tonumber(current) end
    return fence(F, retention)
  end
end
if redis.call('EXISTS', Q) == 1 then
  if phase ~= 'try' then
    enqueue()
    local got = dispatch(S, F, Q, D, retention, probe, owner)
    if got then return got end
    return busy()
  end
  -- A one-shot attempt never overtakes the queue, but serves it if seats expired.
  dispatch(S, F, Q, D, retention, probe, '')
  if redis.call('EXISTS', Q) == 1 then return busy() end
end
local held = below(S, now, permits)
if held < permits then
  -- held == 0: the set is empty, so it does not exist (Redis deletes an empty set).
  seat(S, owner, now + ttl, ttl, held == 0)
  return fence(F, retention)
end
if phase ~= 'try' then enqueue() end
return busy()
`);

/** The acquire script's integer answer as `[1, token]` or `[0, ms until a seat frees, or -1]`. */
export function semaphoreReply(answer: unknown): [number, string | number] {
  const n = Number(answer);
  return n > 0 ? [1, answer as string | number] : [0, -n - 1];
}

/**
 * renew KEYS=S ARGV=owner,ttl
 * Owner-checked: extends our live seat to now + ttl. Returns 1, or 0 when the seat is gone.
 */
export const SEM_RENEW = redisScript(`${FENCE}${COMMON}
local now = now_ms()
local mine, s = find_seat(KEYS[1], ARGV[1])
if not mine then return 0 end
if tonumber(s) <= now then
  redis.call('ZREM', KEYS[1], mine)
  return 0
end
seat(KEYS[1], mine, now + tonumber(ARGV[2]), tonumber(ARGV[2]), false)
return 1
`);

/**
 * release KEYS=S,F,Q,D ARGV=owner,fenceRetention,probe,leaving
 * Owner-checked: frees our seat (plain or marked); with leaving='1' also our queue entry (a waiter
 * that gave up). Then grants the freed seat(s) to the queue's head waiter(s). Returns 1 if a seat
 * of ours was freed. The backend runs it only when a plain `ZREM S owner` did not free the seat
 * (see "Marked seats"), and for a waiter leaving. Fast path: ZREM S (twice for a marked seat),
 * EXISTS Q D, before any helper is defined (Q and D hold entries only for queued waiters and for
 * grants handed over by message: with neither key there is nothing to clean up or serve).
 */
export const SEM_RELEASE = redisScript(`
local S, F, Q, D = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local released = redis.call('ZREM', S, ARGV[1])
if released == 0 then released = redis.call('ZREM', S, '~' .. ARGV[1]) end
if redis.call('EXISTS', Q, D) == 0 then return released end
${FENCE}${COMMON}
redis.call('HDEL', D, ARGV[1])
if ARGV[4] == '1' then redis.call('ZREM', Q, ARGV[1]) end
if (released == 1 or ARGV[4] == '1') and redis.call('EXISTS', Q) == 1 then
  dispatch(S, F, Q, D, ARGV[2], ARGV[3], '')
end
return released
`);

/**
 * inspect KEYS=S,F,Q ARGV=-
 * Returns {flat owner/ms-left pairs of live seats, last token or false, queued waiters}. Writes
 * nothing: a lone seat's ms left are the set's PTTL - 1.
 */
export const SEM_INSPECT = redisScript(`${FENCE}${COMMON}
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

/**
 * forceRelease KEYS=S,F,Q,D ARGV=fenceRetention,probe
 * Frees every seat whoever holds it (the fence is kept) and serves the queue. Returns the seats
 * freed.
 */
export const SEM_FORCE_RELEASE = redisScript(`${FENCE}${COMMON}
-- A lone seat counts as live (it is, while its set exists): no settle() before the DEL.
local n = live(KEYS[1], now_ms())
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[3]) == 1 then
  dispatch(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], '')
end
return n
`);
