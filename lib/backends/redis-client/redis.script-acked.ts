import type {
  RedisClientLike,
  RedisNodeLike,
  RedisPipelineLike,
  RedisReply,
} from './redis-client.types';
import type { RedisScript } from './redis.script';

/** Replies that say a Cluster node did not run the command: its slot is (or moves) elsewhere. */
const REDIRECT = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) /;
/** Redirects followed before the last one is the answer (ioredis's own default). */
const MAX_REDIRECTS = 16;
/** Pause before running again after TRYAGAIN or CLUSTERDOWN (a slot on its way). */
const REDIRECT_DELAY_MS = 100;

/**
 * A script, then `WAIT count timeout`, in one pipeline on a Cluster client: [reply, acked]. ioredis
 * sends a pipeline to one node over one connection, so the WAIT counts the replica acks of exactly
 * the node that ran the script; run apart, the WAIT would go wherever the client's slot map points
 * when it is sent, and a slot that moved between the two (a migration, a failover seen by a slot
 * refresh), or a script served through ASK by a slot's importing node, would have it count the
 * acks of a node that never saw the write.
 *
 * A redirect of the script means it did not run; ioredis does not follow it inside a pipeline
 * whose other command (the WAIT) answered, so it is followed here: MOVED once the client has
 * refreshed its slot map, ASK on the named node's connection after ASKING (the WAIT with it),
 * TRYAGAIN and CLUSTERDOWN after a short pause; at most MAX_REDIRECTS times, then the redirect is
 * the error. A NOSCRIPT goes again with EVAL.
 */
export async function runScriptThenWait(
  client: RedisClientLike,
  script: RedisScript,
  numKeys: number,
  args: readonly (string | number)[],
  replicas: { count: number; timeout: number },
): Promise<[RedisReply, number]> {
  let source = false;
  let asked: RedisNodeLike | undefined;
  for (let redirects = 0; ; redirects++) {
    const pipe = asked?.pipeline ? asked.pipeline() : client.pipeline();
    if (asked) pipe.asking?.();
    const replies = await sendWithWait(pipe, script, source, numKeys, args, replicas);
    const [[error, reply], [waitError, acked]] = asked ? replies.slice(1) : replies;
    asked = undefined;
    if (!error) {
      if (waitError) throw waitError;
      return [reply, Number(acked)];
    }
    if (!source && /NOSCRIPT/.test(error.message)) {
      source = true;
      continue;
    }
    if (!REDIRECT.test(error.message) || redirects >= MAX_REDIRECTS) throw error;
    const [kind, , address] = error.message.split(' ');
    if (kind === 'ASK') asked = nodeAt(client, address);
    if (asked) continue;
    if (kind === 'MOVED' && client.refreshSlotsCache)
      await new Promise<void>((resolve) => client.refreshSlotsCache?.(() => resolve()));
    else await new Promise((r) => setTimeout(r, REDIRECT_DELAY_MS));
  }
}

type Reply = [Error | null, RedisReply];

/** EVALSHA (or EVAL) and WAIT appended to `pipe`, sent: every reply, in order. */
async function sendWithWait(
  pipe: RedisPipelineLike,
  script: RedisScript,
  source: boolean,
  numKeys: number,
  args: readonly (string | number)[],
  replicas: { count: number; timeout: number },
): Promise<Reply[]> {
  if (source) pipe.eval(script.source, numKeys, ...args);
  else pipe.evalsha(script.sha, numKeys, ...args);
  if (!pipe.wait) throw new TypeError('option "replicas" needs a client whose pipeline has WAIT');
  pipe.wait(replicas.count, replicas.timeout);
  const replies = (await pipe.exec()) ?? [];
  const missing: Reply = [new Error('no reply'), null];
  while (replies.length < 2) replies.push(missing);
  return replies;
}

/** The Cluster client's connection to the primary at `address` ("host:port"), if it has one. */
function nodeAt(client: RedisClientLike, address: string | undefined): RedisNodeLike | undefined {
  return client
    .nodes?.('master')
    .find((n) => `${n.options.host ?? '127.0.0.1'}:${n.options.port ?? 6379}` === address);
}
