import { createHash } from 'node:crypto';
import type { RedisClientLike, RedisReply } from './redis-client.types';

/** A Lua script with its SHA1, so it runs with EVALSHA (the source travels only on NOSCRIPT). */
export interface RedisScript {
  readonly source: string;
  readonly sha: string;
}

export function redisScript(source: string): RedisScript {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

const isNoScript = (error: unknown) => error instanceof Error && /NOSCRIPT/.test(error.message);

/**
 * EVALSHA, falling back to EVAL once when the server has not cached the script (first use, a
 * restarted server, SCRIPT FLUSH); EVAL caches it for the next call. Not an async function: on
 * the lock's hot path an async layer (its promise and the await's reaction) allocated more than
 * the rest of this call.
 */
export function runScript(
  client: RedisClientLike,
  script: RedisScript,
  numKeys: number,
  args: readonly (string | number)[],
): Promise<RedisReply> {
  try {
    return client
      .evalsha(script.sha, numKeys, ...args)
      .catch((error: unknown) => evalOnNoScript(error, client, script, numKeys, args));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** EVALSHA's failure: EVAL once when it was NOSCRIPT (the script not cached), else the error. */
function evalOnNoScript(
  error: unknown,
  client: RedisClientLike,
  script: RedisScript,
  numKeys: number,
  args: readonly (string | number)[],
): Promise<RedisReply> {
  if (isNoScript(error)) return client.eval(script.source, numKeys, ...args);
  throw error;
}

/**
 * runScript(...).then(onReply) with one promise and one reaction fewer: the reply goes to onReply
 * from EVALSHA's own promise; only a NOSCRIPT error takes the EVAL path (then onReply as well).
 * For the hot path: the semaphore's free-permit attempt.
 */
export function runScriptThen<R>(
  client: RedisClientLike,
  script: RedisScript,
  numKeys: number,
  args: readonly (string | number)[],
  onReply: (reply: RedisReply) => R | PromiseLike<R>,
): Promise<R> {
  try {
    return client
      .evalsha(script.sha, numKeys, ...args)
      .then(onReply, (error: unknown) =>
        evalOnNoScript(error, client, script, numKeys, args).then(onReply),
      );
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * One script over many argument lists in one pipelined round trip (replies in order). Calls the
 * server answered NOSCRIPT go again in one more pipeline with EVAL. Any other error rejects.
 */
export async function runScriptBatch(
  client: RedisClientLike,
  script: RedisScript,
  numKeys: number,
  calls: readonly (readonly (string | number)[])[],
): Promise<RedisReply[]> {
  if (calls.length === 0) return [];
  if (calls.length === 1) return [await runScript(client, script, numKeys, calls[0])];
  const pipe = client.pipeline();
  for (const args of calls) pipe.evalsha(script.sha, numKeys, ...args);
  const replies = (await pipe.exec()) ?? [];
  if (replies.length !== calls.length) {
    throw new Error(`pipeline answered ${replies.length} of ${calls.length} commands`);
  }
  const missing = replies.flatMap((r, i) => (isNoScript(r[0]) ? [i] : []));
  if (missing.length > 0) {
    const retry = client.pipeline();
    for (const i of missing) retry.eval(script.source, numKeys, ...calls[i]);
    const again = (await retry.exec()) ?? [];
    missing.forEach((i, j) => (replies[i] = again[j] ?? [new Error('no reply'), null]));
  }
  return replies.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  });
}
