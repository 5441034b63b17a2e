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
