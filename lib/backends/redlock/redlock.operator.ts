import { holderMetadata } from '../../backend-kit/holder-data';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { LockHolderInfo, LockInspection } from '../../interfaces/lock-backend.interface';
import {
  FORCE_RELEASE,
  heldOn,
  HOLDERS,
  storedHolders,
  INSPECT,
  lockKeys,
  parseInspect,
  runScript,
  type ServerLockView,
} from '../redis-client';
import type { Masters } from './redlock.masters';
import { gather, tally } from './redlock.quorum';

/**
 * Operator actions over every master. inspect: a holder counts when a majority of the answering
 * masters name it (what an acquire would see); its remaining ttl is the shortest among them; the
 * fencing token is the largest on any master. Waiters: unknown (masters only register processes).
 */
export async function inspectMasters(
  m: Masters,
  key: string,
  timeoutMs: number,
): Promise<LockInspection> {
  const k = lockKeys(key);
  const outcomes = await gather(
    m.clients.length,
    (i) =>
      Promise.all([
        runScript(m.clients[i], INSPECT, 4, [k.writer, k.readers, k.fence, k.queue]),
        runScript(m.clients[i], HOLDERS, 2, [k.holder, k.holders]),
      ]),
    () => false,
    timeoutMs,
  );
  const c = tally(outcomes, () => true);
  if (c.answered < m.quorum) throw unavailable(m, 'inspect', c.answered, key, c.firstError);
  const views: ServerLockView[] = outcomes.flatMap((o) =>
    o?.ok ? [parseInspect(o.value[0])] : [],
  );
  // What any master stored about each owner (every granting master stored the same data).
  const stored = new Map<string, string>();
  for (const o of outcomes) if (o?.ok) storedHolders(o.value[1], stored);
  const holders: LockHolderInfo[] = [];
  const votes = new Map<string, { mode: 'exclusive' | 'shared'; ttls: number[] }>();
  for (const v of views) {
    if (v.writer) vote(votes, v.writer, 'exclusive', v.writerTtl);
    for (const [owner, ms] of v.readers) vote(votes, owner, 'shared', ms);
  }
  for (const [owner, { mode, ttls }] of votes) {
    if (ttls.length >= m.quorum) {
      const metadata = holderMetadata(stored.get(owner));
      holders.push({ mode, owner, remainingTtl: Math.min(...ttls), ...(metadata && { metadata }) });
    }
  }
  let fence: bigint | undefined;
  for (const v of views)
    if (v.fence !== undefined && (fence === undefined || v.fence > fence)) fence = v.fence;
  return {
    key,
    held: holders.length > 0,
    mode: holders[0]?.mode,
    holders,
    fencingToken: fence,
    waiters: undefined,
  };
}

/** Frees `key` on every master whoever holds it; true if a hold was removed anywhere. */
export async function forceReleaseMasters(
  m: Masters,
  key: string,
  timeoutMs: number,
): Promise<boolean> {
  const k = lockKeys(key);
  const outcomes = await gather(
    m.clients.length,
    // Only what has a lock's shape is deleted (heldOn): with keyPrefix '' another app's `{name}`
    // is not ours to free.
    async (i) =>
      (await heldOn(m.clients[i], [key]))[0]
        ? runScript(m.clients[i], FORCE_RELEASE, 5, [
            k.writer,
            k.readers,
            k.queue,
            k.holder,
            k.holders,
            key,
          ])
        : 0,
    () => false,
    timeoutMs,
  );
  const c = tally(outcomes, (r) => r === 1);
  if (c.answered < m.quorum) throw unavailable(m, 'forceRelease', c.answered, key, c.firstError);
  return c.yes > 0;
}

function vote(
  votes: Map<string, { mode: 'exclusive' | 'shared'; ttls: number[] }>,
  owner: string,
  mode: 'exclusive' | 'shared',
  ttl: number | undefined,
) {
  let v = votes.get(owner);
  if (!v) votes.set(owner, (v = { mode, ttls: [] }));
  v.ttls.push(ttl ?? Number.POSITIVE_INFINITY);
}

function unavailable(m: Masters, what: string, answered: number, key: string, cause: unknown) {
  return new LockBackendUnavailableError(
    'redlock',
    `${what}: only ${answered} of ${m.clients.length} masters answered, a majority of ${m.quorum} is needed`,
    { key, cause },
  );
}
