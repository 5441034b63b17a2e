import { createHash } from 'node:crypto';
import { markPartial } from '../../backend-kit/list-answer';
import { lockKeys } from './lock-keys';
import type { RedisClientLike } from './redis-client.types';
import { NOW_MS_LUA } from './lock.scripts';
import { redisScript, runScript, runScriptBatch } from './redis.script';

/** SCAN as ioredis offers it on a `Redis` client (and on each node of a `Cluster`). */
export interface RedisScanLike {
  scan(cursor: string, ...args: (string | number)[]): Promise<[string, string[]]>;
}

/** Keys SCAN is asked for per call; a listing SCANs until done or out of time (its deadline). */
export const SCAN_COUNT = 500;

/**
 * The lock a holder key belongs to: the writer `{K}`, the readers `{K}:r` or the permits `{K}:s`
 * (with the `{#<sha1>}K` tag for keys holding a brace, see lock-keys.ts), else undefined (fences,
 * queues and foreign keys are not holders).
 */
export function holderOf(redisKey: string): string | undefined {
  const close = redisKey.indexOf('}');
  if (!redisKey.startsWith('{') || close < 0) return undefined;
  if (redisKey.startsWith('{#')) {
    const sha = redisKey.slice(2, close);
    const rest = redisKey.slice(close + 1);
    if (sha1(rest) === sha) return rest;
    const base = rest.slice(0, -2);
    return /:[rs]$/.test(rest) && sha1(base) === sha ? base : undefined;
  }
  const tail = redisKey.slice(close + 1);
  return tail === '' || tail === ':r' || tail === ':s' ? redisKey.slice(1, close) : undefined;
}

/** SCAN MATCH patterns covering both tag forms of the keys under `fullPrefix`. */
export function scanPatterns(fullPrefix: string): string[] {
  const g = fullPrefix.replace(/[*?[\]\\]/g, '\\$&');
  return [`{${g}*`, `{#*}${g}*`];
}

/** The servers to SCAN: every master of a Cluster, or the one client. */
export function scanNodes(client: unknown): RedisScanLike[] {
  const c = client as { isCluster?: boolean; nodes?: (role: string) => RedisScanLike[] };
  if (c.isCluster && typeof c.nodes === 'function') return c.nodes('master');
  return [client as RedisScanLike];
}

/**
 * Pages of candidate lock keys (full keys, each once) under `fullPrefix` on `nodes`. Bounded:
 * SCAN_COUNT keys a call, and nothing after `deadline` (Date.now() ms); the caller stops early
 * once it has what it needs. `scan.complete` is left false when the deadline cut the scan short
 * (a keyspace too large to walk in time): the answer is then partial.
 */
export async function* scanCandidates(
  nodes: readonly RedisScanLike[],
  fullPrefix: string,
  deadline: number,
  scan: { complete: boolean } = { complete: true },
): AsyncGenerator<string[]> {
  const seen = new Set<string>();
  for (const node of nodes) {
    for (const pattern of scanPatterns(fullPrefix)) {
      let cursor = '0';
      for (;;) {
        if (Date.now() >= deadline) {
          scan.complete = false;
          return;
        }
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
        const page: string[] = [];
        for (const key of keys) {
          const full = holderOf(key);
          if (full === undefined || !full.startsWith(fullPrefix) || seen.has(full)) continue;
          seen.add(full);
          page.push(full);
        }
        if (page.length > 0) yield page;
        cursor = String(next);
        if (cursor === '0') break;
      }
    }
  }
}

/**
 * held KEYS={K},{K}:r,{K}:s: 1 when the lock has a writer, a live reader or a live permit (scores
 * are expiries in server ms, `inf` for a permit renewed by PTTL), else 0. Read-only, one slot.
 * Only a lock's shape counts: a writer is a string with a ttl (every grant sets PX), readers and
 * permits are sorted sets. With keyPrefix '' another app's `{name}` (a hash, a string kept for
 * ever) is not a lock, and a foreign `{name}:r` of another type cannot fail the call (WRONGTYPE).
 */
export const HELD = redisScript(`${NOW_MS_LUA}
local now = now_ms()
if redis.call('TYPE', KEYS[1]).ok == 'string' and redis.call('PTTL', KEYS[1]) > 0 then return 1 end
for i = 2, 3 do
  if redis.call('TYPE', KEYS[i]).ok == 'zset' and redis.call('ZCOUNT', KEYS[i], '(' .. now, '+inf') > 0 then
    return 1
  end
end
return 0
`);

/** HELD's keys for one full key. */
export function heldArgs(fullKey: string): string[] {
  const k = lockKeys(fullKey);
  return [k.writer, k.readers, `${k.writer}:s`];
}

/**
 * Which of `fullKeys` are held on one server (or Cluster): one pipelined batch on a standalone
 * server, one script per key (each in its own slot) on a Cluster.
 */
export async function heldOn(
  client: RedisClientLike,
  fullKeys: readonly string[],
): Promise<boolean[]> {
  const calls = fullKeys.map(heldArgs);
  const replies = client.isCluster
    ? await Promise.all(calls.map((args) => runScript(client, HELD, 3, args)))
    : await runScriptBatch(client, HELD, 3, calls);
  return replies.map((r) => Number(r) === 1);
}

/**
 * The held keys among the candidates, at most `limit`: each page's candidates checked at once by
 * `held` (a candidate may be a shared or permit set whose members all expired). When the deadline
 * ended the scan before the limit was reached, the answer is marked partial (markPartial).
 */
export async function listHeldKeys(
  nodes: readonly RedisScanLike[],
  fullPrefix: string,
  limit: number,
  deadline: number,
  held: (fullKeys: string[]) => Promise<boolean[]>,
): Promise<string[]> {
  const out: string[] = [];
  if (limit <= 0) return out;
  const scan = { complete: true };
  for await (const page of scanCandidates(nodes, fullPrefix, deadline, scan)) {
    const answers = await held(page);
    for (let i = 0; i < page.length && out.length < limit; i++) if (answers[i]) out.push(page[i]);
    if (out.length >= limit) return out;
  }
  return scan.complete ? out : markPartial(out);
}

function sha1(s: string): string {
  return createHash('sha1').update(s).digest('hex');
}
