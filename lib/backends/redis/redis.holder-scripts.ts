/**
 * hold(H, owner, holder, retention, token): stores the grant's holder data (host, pid, instance) in
 * H={K}:h beside the grant, in the granting script (no round trip of its own), kept `retention` ms
 * like the fence; release deletes it. Returns `token`. Nothing when `holder` is ''.
 */
export const HOLDER = `
local function hold(H, owner, holder, retention, token)
  if holder ~= '' then
    redis.call('HSET', H, owner, holder)
    redis.call('PEXPIRE', H, retention)
  end
  return token
end
`;
