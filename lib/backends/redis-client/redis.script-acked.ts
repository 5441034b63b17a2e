import type {
  RedisClientLike,
  RedisNodeLike,
  RedisPipelineLike,
  RedisReply,
} from './redis-client.types';
import type { RedisScript } from './redis.script';
import { keySlot } from '../../backend-kit/cluster-slot';

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
 * The pipeline goes on the connection of the node that the client's slot map names for the
 * script's first key, not through the Cluster client: ioredis 6.1 resends a pipelined command
 * that was redirected on its own through the cluster, which would run the script on another node
 * and leave the WAIT counting the acks of this one. A node's own pipeline follows no redirect, so
 * a redirect of the script comes back here, and means it did not run: MOVED is followed once the
 * client has refreshed its slot map, ASK on the named node's connection after ASKING (the WAIT
 * with it), TRYAGAIN and CLUSTERDOWN after a short pause; at most MAX_REDIRECTS times, then the
 * redirect is the error. Only before the client's first slot map (and after one refresh that
 * found none) does the pipeline go through the Cluster client. A NOSCRIPT goes again with EVAL.
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
  let refreshed = false;
  for (let redirects = 0; ; redirects++) {
    const node = asked ?? ownerOf(client, numKeys > 0 ? String(args[0]) : undefined);
    if (!node?.pipeline && !refreshed) {
      refreshed = true;
      await refreshSlots(client);
      continue;
    }
    const pipe = node?.pipeline ? node.pipeline() : client.pipeline();
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
    if (kind === 'MOVED' && client.refreshSlotsCache) await refreshSlots(client);
    else await new Promise((r) => setTimeout(r, REDIRECT_DELAY_MS));
  }
}

/** Reads the Cluster client's slot map again (settles also when that failed). */
function refreshSlots(client: RedisClientLike): Promise<void> {
  return new Promise<void>((resolve) =>
    client.refreshSlotsCache ? client.refreshSlotsCache(() => resolve()) : resolve(),
  );
}

/** The connection to the primary that the client's slot map names for `key`'s slot. */
function ownerOf(client: RedisClientLike, key: string | undefined): RedisNodeLike | undefined {
  if (key === undefined) return undefined;
  return nodeAt(client, client.slots?.[keySlot(key)]?.[0]);
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
