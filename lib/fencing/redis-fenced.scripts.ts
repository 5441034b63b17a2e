import { createHash } from 'node:crypto';

/**
 * The fence check every fenced script starts with. KEYS[1] = the fence record (a string holding
 * the highest accepted token, decimal), ARGV[1] = the presented token (decimal, canonical).
 * Tokens may exceed 2^53, so they are compared as decimal strings (length, then bytes), never as
 * Lua numbers. Stale: returns {0, highest} before the write runs. Current: records the token when
 * it is higher and falls through to the write, in the same script, so no other client's command
 * can run between the check and the write.
 */
const CHECK = `
local token = ARGV[1]
local highest = redis.call('GET', KEYS[1])
if highest and (#token < #highest or (#token == #highest and token < highest)) then
  return {0, highest}
end
if highest ~= token then redis.call('SET', KEYS[1], token) end
`;

/** A script and its SHA1 (EVALSHA first, EVAL once when the server has not cached it). */
export interface FencedScript {
  readonly lua: string;
  readonly sha: string;
}

export function fencedScript(lua: string): FencedScript {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/**
 * KEYS: fence, resource; ARGV: token, value, px ('' for none). Returns {1} or {0, highest}.
 * SET resource value [PX px] when the token is current.
 */
export const FENCED_SET = fencedScript(`${CHECK}
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
else
  redis.call('SET', KEYS[2], ARGV[2])
end
return {1}`);

/**
 * KEYS: fence, resource; ARGV: token, field, value, ... Returns {1, fields added} or {0, highest}.
 */
export const FENCED_HSET = fencedScript(`${CHECK}
return {1, redis.call('HSET', KEYS[2], unpack(ARGV, 2))}`);

/** KEYS: fence, resource; ARGV: token, increment. Returns {1, new value} or {0, highest}. */
export const FENCED_INCRBY = fencedScript(`${CHECK}
return {1, redis.call('INCRBY', KEYS[2], ARGV[2])}`);

/**
 * KEYS: fence, resource; ARGV: token. Returns {1, keys removed} or {0, highest}. The fence record
 * stays: a stale holder must not recreate what a newer one deleted.
 */
export const FENCED_DEL = fencedScript(`${CHECK}
return {1, redis.call('DEL', KEYS[2])}`);

/** KEYS: fence; ARGV: token. The fence alone (the guard's check). Returns {1} or {0, highest}. */
export const FENCE_ADVANCE = fencedScript(`${CHECK}
return {1}`);

/**
 * Wraps a user script: KEYS: fence, then the user's keys; ARGV: token, then the user's args. The
 * fence key and token are removed from KEYS/ARGV before the user's code runs, so it sees its own
 * KEYS[1..] and ARGV[1..] as with EVAL. Returns {1, the user's reply} or {0, highest}.
 */
export function wrapUserScript(lua: string): FencedScript {
  return fencedScript(`${CHECK}
table.remove(KEYS, 1)
table.remove(ARGV, 1)
local function body()
${lua}
end
return {1, body()}`);
}
