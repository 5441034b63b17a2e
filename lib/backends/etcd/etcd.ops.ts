import type { LockMode } from '../../interfaces/lock-backend.interface';
import type { EtcdClientLike, EtcdKeyValue, EtcdRangeRequest } from './etcd.client';
import { isContenderKey, prefixRangeEnd, SHARED_VALUE } from './etcd.keys';

/**
 * The etcd round trips of the lock, each one request (a transaction where several reads must see
 * one revision). Contenders are ordered by create revision, exactly as Go's concurrency.Mutex:
 * an exclusive contender holds when no contender is older; a shared one when no older contender
 * is a writer. An exclusive waiter whose read listed every older contender (at most
 * TURN_WATCH_MAX) waits on the lock's queue watch (etcd.turn.ts) with no read after; otherwise a
 * waiter watches one key: the youngest older writer (shared), or (exclusive) the older contender
 * whose delete leaves TURN_WATCH_MAX older ones, and re-reads when it goes.
 */
const PAGE = 32;
/** etcd's default --max-txn-ops is 128. */
const MAX_TXN_OPS = 100;
/**
 * At most this many older contenders for an exclusive waiter to wait on the lock's queue watch
 * (etcd.turn.ts) instead of one key: one page, so the read that queued it listed them all. The
 * watch is one per lock per backend and outlives a wait, so every waiter being on it costs each
 * process one event per delete and no request (a watch per wait, with its create, cancel and
 * gap read, made this rate fall with every waiter on it: docs/backends/etcd.md).
 */
export const TURN_WATCH_MAX = PAGE;

export interface Blocker {
  readonly key: Buffer;
  readonly rev: bigint;
}

export interface Position {
  /** Our contender's create revision: the fencing token. */
  readonly rev: bigint;
  /** Whether our key still exists (false: deleted behind our back or its lease ended). */
  readonly exists: boolean;
  /** The contender to wait for, or undefined when we hold the lock. */
  readonly blocker?: Blocker;
  /** Store revision the answer was read at: watch the blocker from the next one, miss nothing. */
  readonly revision: string;
  /** Every older contender (exclusive mode, at most TURN_WATCH_MAX): lets etcd.turn.ts wait. */
  readonly older?: readonly Blocker[];
}

export interface Contender {
  readonly key: Buffer;
  /** Prefix `NAME/` of the lock. */
  readonly lockPrefix: Buffer;
  readonly mode: LockMode;
  /** Value of an election candidate's key (its proposal, as concurrency.Election); else by mode. */
  readonly value?: string;
}

const opts = (deadline: number) => ({ deadline });

/** Older contenders, youngest first, below `maxRev`. */
function olderRange(c: Contender, maxRev: bigint, limit = PAGE): EtcdRangeRequest {
  return {
    key: c.lockPrefix,
    range_end: prefixRangeEnd(c.lockPrefix),
    max_create_revision: String(maxRev),
    sort_order: 'Descend',
    sort_target: 'Create',
    limit,
  };
}

/**
 * The key to wait for in a youngest-first page, skipping our own key and foreign keys. Shared: the
 * youngest older writer. Exclusive (only when more than TURN_WATCH_MAX are older, else the queue
 * watch waits): the (TURN_WATCH_MAX + 1)-th youngest older contender (or the oldest in the page):
 * its delete leaves at most TURN_WATCH_MAX older ones in FIFO order, so the waiter re-reads and
 * moves to the queue watch while those still hold. Any older key blocks an exclusive waiter, so
 * waiting for this one never skips our turn.
 */
function pick(c: Contender, kvs: readonly EtcdKeyValue[]): Blocker | undefined {
  let found: Blocker | undefined;
  let seen = 0;
  for (const kv of kvs) {
    if (kv.key.equals(c.key) || !isContenderKey(kv.key, c.lockPrefix)) continue;
    if (c.mode === 'exclusive' || kv.value.toString() !== SHARED_VALUE) {
      found = { key: kv.key, rev: BigInt(kv.create_revision) };
      if (c.mode !== 'exclusive' || seen++ === TURN_WATCH_MAX) return found;
    }
  }
  return found;
}

/**
 * Every older contender in a youngest-first page, when the page holds them all, we are exclusive
 * (any older key blocks us) and they are few; else undefined.
 */
export function allOlder(
  c: Contender,
  kvs: readonly EtcdKeyValue[],
  more: boolean,
): Blocker[] | undefined {
  if (more || c.mode !== 'exclusive') return undefined;
  const older = kvs
    .filter((kv) => !kv.key.equals(c.key) && isContenderKey(kv.key, c.lockPrefix))
    .map((kv) => ({ key: kv.key, rev: BigInt(kv.create_revision) }));
  return older.length <= TURN_WATCH_MAX ? older : undefined;
}

/** Pages on through older contenders when the first page held none that blocks us. */
async function pageOn(
  client: EtcdClientLike,
  c: Contender,
  kvs: readonly EtcdKeyValue[],
  more: boolean,
  deadline: number,
): Promise<Blocker | undefined> {
  let found = pick(c, kvs);
  while (!found && more && kvs.length > 0) {
    const oldest = BigInt(kvs[kvs.length - 1].create_revision);
    const res = await client.kv.range(olderRange(c, oldest - 1n), opts(deadline));
    ({ kvs, more } = res);
    found = pick(c, kvs);
  }
  return found;
}

/**
 * One transaction: create our key on the session lease if absent, and read the youngest
 * contenders in the same revision (ours is the youngest then, so the next one is our predecessor).
 * If the key exists already (a retry after a lost answer), adopt it and read our position.
 */
export async function createContender(
  client: EtcdClientLike,
  c: Contender,
  leaseId: string,
  deadline: number,
): Promise<Position> {
  const res = await client.kv.txn(
    {
      compare: [{ key: c.key, target: 'Create', result: 'Equal', create_revision: 0 }],
      success: [
        {
          request_put: {
            key: c.key,
            value: Buffer.from(c.value ?? (c.mode === 'shared' ? SHARED_VALUE : '')),
            lease: leaseId,
          },
        },
        {
          request_range: {
            key: c.lockPrefix,
            range_end: prefixRangeEnd(c.lockPrefix),
            sort_order: 'Descend',
            sort_target: 'Create',
            limit: PAGE + 1,
          },
        },
      ],
      failure: [{ request_range: { key: c.key } }],
    },
    opts(deadline),
  );
  if (!res.succeeded) {
    const own = res.responses[0].response_range.kvs[0];
    if (!own) return { rev: 0n, exists: false, revision: res.header.revision };
    return findBlocker(client, c, BigInt(own.create_revision), deadline);
  }
  const page = res.responses[1].response_range;
  const blocker = await pageOn(client, c, page.kvs, page.more, deadline);
  const older = allOlder(c, page.kvs, page.more);
  const rev = BigInt(res.header.revision);
  return { rev, exists: true, blocker, revision: res.header.revision, older };
}

/**
 * One read-only transaction: does our key still exist, and which older contender blocks us (if
 * any)? Serializable (answered by the member from its own state, no ReadIndex round with the
 * leader and no wait behind writes being flushed: measured 5 ms of every handoff under
 * contention), which is safe here: the answer counts only when it shows our own key at `rev`, so
 * the member had applied our creation; every older contender was created before us and a deleted
 * key never comes back under an older revision, so a late view shows a superset of today's older
 * contenders (it may make us wait once more, never grant early), and a view in which the blocker
 * we waited for is gone is at or after its deletion, so it also shows any earlier deletion of
 * our own key. Go's Mutex makes the same two checks with two linearizable reads.
 */
export async function findBlocker(
  client: EtcdClientLike,
  c: Contender,
  rev: bigint,
  deadline: number,
): Promise<Position> {
  const res = await readPosition(client, c, rev, true, deadline);
  const own = res.responses[0].response_range.kvs[0];
  if (!own || BigInt(own.create_revision) !== rev)
    return { rev, exists: false, revision: res.header.revision };
  const page = res.responses[1].response_range;
  // Further pages are separate (linearizable) reads: only the first carries the proof above.
  const blocker = await pageOn(client, c, page.kvs, page.more, deadline);
  const older = allOlder(c, page.kvs, page.more);
  return { rev, exists: true, blocker, revision: res.header.revision, older };
}

/** One read-only txn at one revision: our key, and the older contenders (youngest first). */
export function readPosition(
  client: EtcdClientLike,
  c: Contender,
  rev: bigint,
  serializable: boolean,
  deadline: number,
) {
  return client.kv.txn(
    {
      success: [
        { request_range: { key: c.key, serializable } },
        { request_range: { ...olderRange(c, rev - 1n), serializable } },
      ],
    },
    opts(deadline),
  );
}

/**
 * Whether `blocker` was deleted at or before `revision` (its key is gone or was created again
 * since). Serializable first; when that member's view is older than `revision`, asked again
 * linearizably.
 */
export async function blockerGone(
  client: EtcdClientLike,
  blocker: Blocker,
  revision: string,
  deadline: number,
): Promise<boolean> {
  let res = await client.kv.range(
    { key: blocker.key, keys_only: true, serializable: true },
    opts(deadline),
  );
  if (BigInt(res.header.revision) < BigInt(revision))
    res = await client.kv.range({ key: blocker.key, keys_only: true }, opts(deadline));
  const kv = res.kvs[0];
  return !kv || BigInt(kv.create_revision) !== blocker.rev;
}

/**
 * Deletes a contender; with `rev`, only the key created at that revision (never a newer one).
 * Resolves whether it was there.
 */
export async function deleteContender(
  client: EtcdClientLike,
  key: Buffer,
  rev: bigint | undefined,
  deadline: number,
): Promise<boolean> {
  if (rev === undefined) {
    const res = await client.kv.deleteRange({ key }, opts(deadline));
    return res.deleted !== '0';
  }
  const res = await client.kv.txn(
    {
      compare: [{ key, target: 'Create', result: 'Equal', create_revision: String(rev) }],
      success: [{ request_delete_range: { key } }],
    },
    opts(deadline),
  );
  return res.succeeded && res.responses[0]?.response_delete_range?.deleted !== '0';
}

/**
 * Whether a writer queued after our (shared) contender: then new readers must queue too (no writer
 * starvation).
 */
export async function writerQueuedAfter(
  client: EtcdClientLike,
  c: Contender,
  rev: bigint,
  deadline: number,
): Promise<boolean> {
  const res = await client.kv.range(
    {
      key: c.lockPrefix,
      range_end: prefixRangeEnd(c.lockPrefix),
      min_create_revision: String(rev + 1n),
      sort_order: 'Ascend',
      sort_target: 'Create',
    },
    opts(deadline),
  );
  return res.kvs.some(
    (kv) => isContenderKey(kv.key, c.lockPrefix) && kv.value.toString() !== SHARED_VALUE,
  );
}

/**
 * For each key: does it still exist as the key we created (create revision and lease
 * match)?
 */
export async function verifyContenders(
  client: EtcdClientLike,
  items: readonly { key: Buffer; rev: bigint; leaseId: string }[],
  deadline: number,
): Promise<boolean[]> {
  const out: boolean[] = [];
  for (let i = 0; i < items.length; i += MAX_TXN_OPS) {
    const chunk = items.slice(i, i + MAX_TXN_OPS);
    const res = await client.kv.txn(
      { success: chunk.map((it) => ({ request_range: { key: it.key, keys_only: true } })) },
      opts(deadline),
    );
    chunk.forEach((it, j) => {
      const kv = res.responses[j].response_range.kvs[0];
      out.push(!!kv && BigInt(kv.create_revision) === it.rev && kv.lease === it.leaseId);
    });
  }
  return out;
}
