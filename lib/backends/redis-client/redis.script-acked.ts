import type { RedisClientLike, RedisReply } from './redis-client.types';
import type { RedisScript } from './redis.script';

/** Replies that say a Cluster node did not run the command: its slot is (or moves) elsewhere. */
const REDIRECT = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) /;
/** Redirects followed before the last one is the answer (ioredis's own default). */
const MAX_REDIRECTS = 16;
/** Pause before running again after ASK, TRYAGAIN or CLUSTERDOWN (a slot on its way). */
const REDIRECT_DELAY_MS = 100;

/**
 * A script, then `WAIT count timeout`, in one pipeline on a Cluster client: [reply, acked]. ioredis
 * sends a pipeline to one node over one connection, so the WAIT counts the replica acks of exactly
 * the node that ran the script; run apart, the WAIT would go wherever the client's slot map points
 * when it is sent, and a slot that moved between the two (a migration, a failover seen by a slot
 * refresh) would have it count acks of a node that never saw the write.
 *
 * A redirect of the script (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) means it did not run; ioredis does
 * not follow it inside a pipeline whose other command (the WAIT) answered, so it is followed here:
 * after MOVED once the client has refreshed its slot map, otherwise after a short pause, at most
 * MAX_REDIRECTS times, then the redirect is the error. A NOSCRIPT goes again with EVAL.
 */
export async function runScriptThenWait(
  client: RedisClientLike,
  script: RedisScript,
  numKeys: number,
  args: readonly (string | number)[],
  replicas: { count: number; timeout: number },
): Promise<[RedisReply, number]> {
  let source = false;
  for (let redirects = 0; ; redirects++) {
    const pipe = client.pipeline();
    if (source) pipe.eval(script.source, numKeys, ...args);
    else pipe.evalsha(script.sha, numKeys, ...args);
    if (!pipe.wait) throw new TypeError('option "replicas" needs a client whose pipeline has WAIT');
    pipe.wait(replicas.count, replicas.timeout);
    const [[error, reply] = [new Error('no reply'), null], [waitError, acked] = [null, 0]] =
      (await pipe.exec()) ?? [];
    if (!error) {
      if (waitError) throw waitError;
      return [reply, Number(acked)];
    }
    if (!source && /NOSCRIPT/.test(error.message)) {
      source = true;
      continue;
    }
    if (!REDIRECT.test(error.message) || redirects >= MAX_REDIRECTS) throw error;
    if (error.message.startsWith('MOVED') && client.refreshSlotsCache)
      await new Promise<void>((resolve) => client.refreshSlotsCache?.(() => resolve()));
    else await new Promise((r) => setTimeout(r, REDIRECT_DELAY_MS));
  }
}
