/**
 * The Redis lock's script calls, one function each, over the resolved options and nothing else:
 * the acquire attempt, release (and a waiter's leave), the renewal batch, inspect, forceRelease,
 * and the WAIT for replica acks. RedisLockBackend (redis.backend.ts) owns the state and the
 * queued-wait loop; these hold no state of their own (the RecentMarks they consult are the
 * backend's).
 */
import { holderData } from '../../backend-kit/holder-data';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { BackendAttempt, BackendLock } from '../../interfaces/lock-backend.interface';
import {
  runScript,
  runScriptBatch,
  runScriptThen,
  runScriptThenWait,
  type RedisClientLike,
} from '../redis-client';
import type { ResolvedRedisOptions } from './redis.options';
import type { RecentMarks } from './redis.recent-marks';
import {
  ACQUIRE,
  everyLockKey,
  LOCK_FREE,
  lockKeys,
  RELEASE,
  RELEASE_UNQUEUED,
  RENEW,
} from './redis.scripts';

export type Phase = 'try' | 'wait' | 'recheck';

/**
 * One acquire script: `[1, token]` when granted, else `[0, the holder's remaining ms]`. Not an
 * async function (once the client is known): no layer of its own on the hot path.
 */
export function attempt(
  o: ResolvedRedisOptions,
  channel: string,
  request: BackendAttempt,
  phase: Phase,
  waitMs: number,
  busyKeys?: RecentMarks,
): Promise<[number, string | number]> {
  return attemptScript(o, channel, request, phase, waitMs, busyKeys).then(attemptReply);
}

/**
 * The acquire script's own answer (attemptReply reads it): the queued wait adds no .then for it.
 * A first exclusive attempt ('try' or 'wait') on a key not in `busyKeys` runs the short LOCK_FREE,
 * which only grants a key nobody holds or waits for (the uncontended case); when it answers nil
 * the key is marked busy and ACQUIRE runs, which serves every case. So a key in steady contention
 * costs a process the extra round trip about once a second.
 */
export function attemptScript(
  o: ResolvedRedisOptions,
  channel: string,
  request: BackendAttempt,
  phase: Phase,
  waitMs: number,
  busyKeys?: RecentMarks,
): Promise<unknown> {
  const client = o.source.current;
  if (!client)
    return Promise.resolve(o.source.get()).then(() =>
      attemptScript(o, channel, request, phase, waitMs, busyKeys),
    );
  if (o.replicas && client.isCluster) {
    const args = acquireArgs(client, o, channel, request, phase, waitMs);
    return runScriptThenWait(client, ACQUIRE, 7, args, o.replicas).then(([reply, acked]) => {
      clusterAcks.set(request, acked);
      return reply;
    });
  }
  if (!busyKeys || phase === 'recheck' || request.mode !== 'exclusive' || busyKeys.has(request.key))
    return fullAttempt(client, o, channel, request, phase, waitMs);
  const { writer, readers, fence, queue, holder } = lockKeys(request.key);
  const who = holderData(request.holder);
  const args = [
    writer,
    readers,
    fence,
    queue,
    holder,
    request.owner,
    request.ttl,
    o.fenceRetention,
    who,
  ];
  return runScriptThen(client, LOCK_FREE, 5, args, (answer) => {
    if (typeof answer === 'string') return answer;
    busyKeys.mark(request.key);
    return fullAttempt(client, o, channel, request, phase, waitMs);
  });
}

/** The ACQUIRE script (every case: grant, queue, re-check) over `client`. */
function fullAttempt(
  client: RedisClientLike,
  o: ResolvedRedisOptions,
  channel: string,
  request: BackendAttempt,
  phase: Phase,
  waitMs: number,
): Promise<unknown> {
  return runScript(client, ACQUIRE, 7, acquireArgs(client, o, channel, request, phase, waitMs));
}

/** The ACQUIRE script's keys and arguments. */
function acquireArgs(
  client: RedisClientLike,
  o: ResolvedRedisOptions,
  channel: string,
  request: BackendAttempt,
  phase: Phase,
  waitMs: number,
): (string | number)[] {
  return [
    ...everyLockKey(lockKeys(request.key)),
    request.owner,
    request.ttl,
    request.mode,
    o.fenceRetention,
    phase,
    waitMs,
    channel,
    client.isCluster ? '0' : '1',
    holderData(request.holder),
  ];
}

/**
 * The script answers the token (a string) when granted, else the holder's remaining ms (an
 * integer).
 */
export function attemptReply(reply: unknown): [number, string | number] {
  return typeof reply === 'string' ? [1, reply] : [0, Number(reply)];
}

export function busy(reply: [number, string | number]): { acquired: false; retryAfter?: number } {
  const pttl = Number(reply[1]);
  return { acquired: false, retryAfter: pttl >= 0 ? pttl : undefined };
}

/**
 * The owner-checked release script; `leaving` '1' also takes a waiter out of the queue. Answers 1
 * when the lock was ours. Not async (see attempt). An exclusive release (not a waiter's leave) on
 * a key not in `contendedKeys` runs the short RELEASE_UNQUEUED; when it finds waiters queued (-1,
 * nothing changed) the key is marked contended and RELEASE runs, which hands the lock over.
 */
export function releaseScript(
  o: ResolvedRedisOptions,
  lock: BackendLock,
  leaving: '0' | '1',
  contendedKeys?: RecentMarks,
): Promise<unknown> {
  const client = o.source.current;
  if (!client)
    return Promise.resolve(o.source.get()).then(() =>
      releaseScript(o, lock, leaving, contendedKeys),
    );
  const k = lockKeys(lock.key);
  if (
    contendedKeys &&
    leaving === '0' &&
    lock.mode === 'exclusive' &&
    !contendedKeys.has(lock.key)
  ) {
    return runScriptThen(client, RELEASE_UNQUEUED, 2, [k.writer, k.queue, lock.owner], (answer) => {
      if (Number(answer) >= 0) return answer;
      contendedKeys.mark(lock.key);
      return releaseScript(o, lock, leaving);
    });
  }
  const args = [
    ...everyLockKey(k),
    lock.owner,
    lock.mode,
    o.fenceRetention,
    client.isCluster ? '0' : '1',
    leaving,
  ];
  return runScript(client, RELEASE, 7, args);
}

/**
 * The renewal scripts of plain (not semaphore) locks; true where the lock was still ours. With
 * `replicas` on Cluster each renewal runs with its own WAIT on its node's connection, and a
 * renewal too few replicas acknowledged fails the batch (as the one WAIT does on a single primary).
 */
export async function renewScripts(
  o: ResolvedRedisOptions,
  backendName: string,
  locks: readonly BackendLock[],
): Promise<boolean[]> {
  const calls = locks.map((l) => {
    const k = lockKeys(l.key);
    return [k.writer, k.readers, l.owner, l.ttl, l.mode];
  });
  const client = await o.source.get();
  if (o.replicas && client.isCluster) {
    const replicas = o.replicas;
    const acked = await Promise.all(
      calls.map((args) => runScriptThenWait(client, RENEW, 2, args, replicas)),
    );
    acked.forEach(([reply, n], i) => {
      if (reply === 1) checkAcks(o, backendName, 'renewal', locks[i].key, n);
    });
    return acked.map(([reply]) => reply === 1);
  }
  // Cluster: keys live on different nodes; the calls go out concurrently (one round trip of
  // latency). Standalone: one pipelined round trip for the whole batch.
  const replies = client.isCluster
    ? await Promise.all(calls.map((args) => runScript(client, RENEW, 2, args)))
    : await runScriptBatch(client, RENEW, 2, calls);
  return replies.map((r) => r === 1);
}

/** WAIT for replica acks of a plain lock's grant; too few: give the grant back and fail closed. */
export async function confirmReplicated(
  o: ResolvedRedisOptions,
  backendName: string,
  lock: BackendLock,
): Promise<void> {
  try {
    const acked = clusterAcks.get(lock);
    if (acked === undefined) await waitForReplicas(o, backendName, 'grant', lock.key);
    else checkAcks(o, backendName, 'grant', lock.key, acked);
  } catch (error) {
    // The replicas error is what the caller must see; a failed give-back expires by its ttl.
    await releaseScript(o, lock, '0').catch(() => undefined);
    throw error;
  }
}

/** Errors that say `replicas` went unmet: a queued wait ends with them instead of retrying. */
const unmet = new WeakSet<object>();

/**
 * Cluster: the acks of the WAIT that ran with an attempt's script (runScriptThenWait), by attempt;
 * confirmReplicated reads those of the attempt that granted.
 */
export const clusterAcks = new WeakMap<BackendLock, number>();

/** true for the error of a grant that too few replicas acknowledged (see waitForReplicas). */
export function isReplicasUnmet(error: unknown): boolean {
  return typeof error === 'object' && error !== null && unmet.has(error);
}

/**
 * WAIT on our connection to a single primary (standalone or Sentinel-managed): it covers every
 * write this connection sent before it (the replication offset only grows), so one WAIT confirms a
 * whole renewal batch. It blocks the connection for up to `timeout` ms, which is why that should
 * stay well below the ttl. On Cluster the WAIT goes with each script instead (runScriptThenWait):
 * apart from it, it could run on another node than the one that took the write.
 */
export async function waitForReplicas(
  o: ResolvedRedisOptions,
  backendName: string,
  what: string,
  key: string,
): Promise<void> {
  const { count, timeout } = o.replicas as { count: number; timeout: number };
  const client = await o.source.get();
  if (client.isCluster || typeof client.wait !== 'function') {
    throw new LockBackendUnavailableError(
      backendName,
      client.isCluster
        ? 'option "replicas": a Cluster client WAITs with each script, not apart'
        : 'option "replicas" needs a client with WAIT (an ioredis Redis or Cluster client)',
      { key },
    );
  }
  checkAcks(o, backendName, what, key, await client.wait(count, timeout));
}

/** Throws the "only N of M replicas acknowledged" error when `acked` is short of `replicas`. */
export function checkAcks(
  o: ResolvedRedisOptions,
  backendName: string,
  what: string,
  key: string,
  acked: number,
): void {
  const { count, timeout } = o.replicas as { count: number; timeout: number };
  if (acked >= count) return;
  const error = new LockBackendUnavailableError(
    backendName,
    `only ${acked} of ${count} replicas acknowledged the ${what} within ${timeout} ms (option "replicas")`,
    { key },
  );
  unmet.add(error);
  throw error;
}
