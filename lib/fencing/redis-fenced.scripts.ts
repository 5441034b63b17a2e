import { createHash } from 'node:crypto';

/**
 * The fence check every fenced script starts with. KEYS[1] = the fence record: `<token>` or
 * `<token>:<grant>`, the highest accepted token and the grant that wrote it. ARGV[1] = the
 * presented token (decimal, canonical), ARGV[2] = its grant ('' for a bare token), ARGV[3] = the
 * record's retention in ms ('' = kept for ever). Tokens may exceed 2^53, so they are compared as
 * decimal strings (length, then bytes), never as Lua numbers. Refused, before the write runs,
 * with {0, highest}: a lower token, or the highest token from another grant (a token repeated
 * across a failover). {-1, value}: the record's key holds something that is not a fence record.
 * Current: records the token and grant and falls through to the write, in the same script, so no
 * other client's command can run between the check and the write.
 */
const CHECK = `
local token, grant, retention = ARGV[1], ARGV[2], ARGV[3]
local record = redis.call('GET', KEYS[1])
if record then
  local highest, holder = string.match(record, '^(%d+):?([%w_-]*)$')
  if not highest then return {-1, string.sub(record, 1, 64)} end
  if #token < #highest or (#token == #highest and token < highest) then return {0, highest} end
  if token == highest and holder ~= grant then return {0, highest} end
end
local want = token
if grant ~= '' then want = token .. ':' .. grant end
if retention ~= '' then
  redis.call('SET', KEYS[1], want, 'PX', retention)
elseif record ~= want then
  redis.call('SET', KEYS[1], want)
end
`;

/** How many ARGV entries CHECK reads before the write's own. */
export const CHECK_ARGS = 3;

/** A script and its SHA1 (EVALSHA first, EVAL once when the server has not cached it). */
export interface FencedScript {
  readonly lua: string;
  readonly sha: string;
}

export function fencedScript(lua: string): FencedScript {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/**
 * KEYS: fence, resource; ARGV: check's three, value, px ('' for none). Returns {1} or {0, highest}.
 * SET resource value [PX px] when the token is current.
 */
export const FENCED_SET = fencedScript(`${CHECK}
if ARGV[5] ~= '' then
  redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])
else
  redis.call('SET', KEYS[2], ARGV[4])
end
return {1}`);

/**
 * KEYS: fence, resource; ARGV: check's three, field, value, ... Returns {1, fields added} or
 * {0, highest}.
 */
export const FENCED_HSET = fencedScript(`${CHECK}
return {1, redis.call('HSET', KEYS[2], unpack(ARGV, 4))}`);

/** KEYS: fence, resource; ARGV: check's three, increment. {1, new value} or {0, highest}. */
export const FENCED_INCRBY = fencedScript(`${CHECK}
return {1, redis.call('INCRBY', KEYS[2], ARGV[4])}`);

/**
 * KEYS: fence, resource; ARGV: check's three. Returns {1, keys removed} or {0, highest}. The fence
 * record stays: a stale holder must not recreate what a newer one deleted.
 */
export const FENCED_DEL = fencedScript(`${CHECK}
return {1, redis.call('DEL', KEYS[2])}`);

/** KEYS: fence; ARGV: check's three. The fence alone (the guard's check). {1} or {0, highest}. */
export const FENCE_ADVANCE = fencedScript(`${CHECK}
return {1}`);

/**
 * Wraps a user script: KEYS: fence, then the user's keys; ARGV: check's three, then the user's
 * args. The fence key and check's args are removed from KEYS/ARGV before the user's code runs, so
 * it sees its own KEYS[1..] and ARGV[1..] as with EVAL. Returns {1, the user's reply} or
 * {0, highest}.
 */
export function wrapUserScript(lua: string): FencedScript {
  return fencedScript(`${CHECK}
table.remove(KEYS, 1)
for _ = 1, ${CHECK_ARGS} do table.remove(ARGV, 1) end
local function body()
${lua}
end
return {1, body()}`);
}
