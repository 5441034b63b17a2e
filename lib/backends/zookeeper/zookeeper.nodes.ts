import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';

/**
 * Node naming and ordering, shared with Apache Curator so a Java service and this module exclude
 * each other on the same lock path:
 * - lock directory `<basePath>/<encoded key>`; one EPHEMERAL_SEQUENTIAL child per contender;
 * - InterProcessMutex children are `_c_<uuid>-lock-<seq>`, InterProcessReadWriteLock children are
 *   `_c_<uuid>-__READ__<seq>` / `_c_<uuid>-__WRIT__<seq>` (`_c_<uuid>-` is Curator's "protected"
 *   prefix, which lets a client find its own node after a create whose answer was lost);
 * - Curator LeaderLatch children (our election campaigns too) are `_c_<uuid>-latch-<seq>` with the
 *   participant id (our proposal) as data;
 * - kazoo's Lock / Election children are `<uuid hex>__lock__<seq>`, its ReadLock's `__rlock__`;
 * - children sort by the text after the last lock name (the 10-digit sequence), exactly as
 *   Curator's StandardLockInternalsDriver.fixForSorting does, over every name above, so Curator's,
 *   kazoo's and our nodes in one directory are ordered by the server's sequence alone.
 */
export const PROTECTED_PREFIX = '_c_';
export const MUTEX_LOCK_NAME = 'lock-';
export const READ_LOCK_NAME = '__READ__';
export const WRITE_LOCK_NAME = '__WRIT__';
/** Curator LeaderLatch's node name (LeaderLatch.LOCK_NAME). */
export const LATCH_NAME = 'latch-';
/** kazoo's Lock._NODE_NAME (Lock, WriteLock, and so Election) and ReadLock._NODE_NAME. */
export const KAZOO_LOCK_NAME = '__lock__';
export const KAZOO_READ_LOCK_NAME = '__rlock__';
/** Curator InterProcessSemaphoreV2's lease node name (its `leases` children). */
export const LEASE_NAME = 'lease-';
/** Every lock name we order by, longest first where one could end another. */
const LOCK_NAMES = [
  READ_LOCK_NAME,
  WRITE_LOCK_NAME,
  KAZOO_READ_LOCK_NAME,
  KAZOO_LOCK_NAME,
  LATCH_NAME,
  MUTEX_LOCK_NAME,
  LEASE_NAME,
] as const;
/**
 * Our cap on one encoded node name. ZooKeeper's own bound is jute.maxbuffer (1 MiB) per request.
 */
export const MAX_NODE_NAME_LENGTH = 1024;
export const MAX_BASE_PATH_LENGTH = 512;

/**
 * Which Curator recipe our exclusive mode speaks: InterProcessMutex ('lock-') or the write half of
 * InterProcessReadWriteLock ('__WRIT__').
 */
export type CuratorRecipe = 'mutex' | 'read-write';
/**
 * Whose recipes our nodes speak. 'curator' (default): locks are InterProcessMutex `lock-` (or
 * InterProcessReadWriteLock `__WRIT__` / `__READ__`) nodes and campaigns are LeaderLatch `latch-`
 * nodes, so Curator sees them; kazoo sees our lock nodes only when its Lock is built with
 * `extra_lock_patterns=['-lock-']`. 'kazoo': locks are kazoo Lock/WriteLock `__lock__` and ReadLock
 * `__rlock__` nodes and campaigns are kazoo Election (`__lock__`) nodes with the proposal as data,
 * so kazoo sees them as they are (Curator then does not). Either way our own ordering counts every
 * one of these names as a contender.
 */
export type NodeNames = 'curator' | 'kazoo';

const SAFE = /^[A-Za-z0-9_:.-]$/;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Encodes a full lock key into ONE node name, injectively: every character outside
 * [A-Za-z0-9_:.-] (so `/`, `%`, NUL, controls, spaces, non-ASCII) becomes %XX of its UTF-8
 * bytes; a name made only of dots (`.`, `..`: relative paths to ZooKeeper) has its dots encoded
 * too. A literal `%` always becomes %25, so no encoded form can be produced by another key.
 */
export function encodeLockName(key: string): string {
  if (typeof key !== 'string' || key.length === 0)
    throw new InvalidLockOptionsError('key', key, 'a non-empty string');
  let out = '';
  const allDots = /^\.+$/.test(key);
  for (const ch of key) {
    if (SAFE.test(ch) && !(allDots && ch === '.')) out += ch;
    else
      for (const byte of Buffer.from(ch, 'utf8'))
        out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (out.length > MAX_NODE_NAME_LENGTH) {
    throw new InvalidLockOptionsError(
      'key',
      key,
      `a key whose ZooKeeper node name (%XX-encoded) has at most ${MAX_NODE_NAME_LENGTH} characters (got ${out.length})`,
      key,
    );
  }
  return out;
}

/**
 * The UTF-16 code units ZooKeeper's own path check (PathUtils.validatePath) refuses: controls
 * (C0, DEL, C1), U+D800-U+F8FF (surrogates, so every character above U+FFFF, and the private use
 * area) and U+FFF0-U+FFFF. Tested per code unit, as the server does (no `u` flag).
 */
const ZK_REFUSED = /[\u0000-\u001f\u007f-\u009f\ud800-\uf8ff\ufff0-\uffff]/;

/**
 * Checks a basePath: absolute, no trailing or double slash, no `.`/`..` components, no character
 * the server refuses in a path (ZK_REFUSED), not under /zookeeper. A bad one fails at
 * construction, not as backend-unavailable on every acquire.
 */
export function checkBasePath(basePath: unknown): string {
  const allowed = `an absolute ZooKeeper path like '/locks' (no trailing or double '/', no '.' or '..' components, no control characters, none of U+D800-U+F8FF or U+FFF0-U+FFFF, not under '/zookeeper', at most ${MAX_BASE_PATH_LENGTH} characters)`;
  if (
    typeof basePath !== 'string' ||
    basePath.length < 2 ||
    basePath.length > MAX_BASE_PATH_LENGTH ||
    !basePath.startsWith('/')
  ) {
    throw new InvalidLockOptionsError('basePath', basePath, allowed);
  }
  const parts = basePath.slice(1).split('/');
  if (
    parts.some((p) => p === '' || p === '.' || p === '..') ||
    CONTROL.test(basePath) ||
    ZK_REFUSED.test(basePath) ||
    parts[0] === 'zookeeper'
  ) {
    throw new InvalidLockOptionsError('basePath', basePath, allowed);
  }
  return basePath;
}

/** The directory of a lock: `<basePath>/<encoded key>`. Exported for tests and operators. */
export function lockDirectory(basePath: string, key: string): string {
  return `${basePath}/${encodeLockName(key)}`;
}

/**
 * Curator's protected id is a UUID; ours is the 128-bit owner token laid out as one (8-4-4-4-12).
 */
export function protectedId(owner: string): string {
  const hex = /^[0-9a-f]{32}$/i.test(owner)
    ? owner.toLowerCase()
    : Buffer.from(owner, 'utf8').toString('hex').padEnd(32, '0').slice(0, 32);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The name prefix of our node (the server appends the 10-digit sequence). */
export function nodePrefix(id: string, lockName: string): string {
  return `${PROTECTED_PREFIX}${id}-${lockName}`;
}

/**
 * Our node's lock name for a request: Curator's (LeaderLatch `latch-` for campaigns, the mutex or
 * the read/write lock's halves) or kazoo's (an Election is a `__lock__` Lock).
 */
export function lockNameFor(
  nodeNames: NodeNames,
  curatorRecipe: CuratorRecipe,
  mode: 'exclusive' | 'shared',
  election: boolean,
): string {
  if (nodeNames === 'kazoo')
    return mode === 'shared' && !election ? KAZOO_READ_LOCK_NAME : KAZOO_LOCK_NAME;
  if (election) return LATCH_NAME;
  if (mode === 'shared') return READ_LOCK_NAME;
  return curatorRecipe === 'mutex' ? MUTEX_LOCK_NAME : WRITE_LOCK_NAME;
}

/**
 * Curator's fixForSorting over every lock name we know: the text after the lock name that ends
 * last in the name (for every well-formed node, the server's 10-digit sequence). A child with no
 * known name sorts by its whole name, as in Curator (after every sequence, so it never holds).
 */
export function sequenceOf(child: string): string {
  let end = -1;
  for (const name of LOCK_NAMES) {
    const i = child.lastIndexOf(name);
    if (i >= 0 && i + name.length > end) end = i + name.length;
  }
  return end >= 0 ? child.slice(end) : child;
}

export function sortChildren(children: readonly string[]): string[] {
  return [...children].sort((a, b) => {
    const sa = sequenceOf(a);
    const sb = sequenceOf(b);
    return sa < sb ? -1 : sa > sb ? 1 : a < b ? -1 : a > b ? 1 : 0;
  });
}

/**
 * Readers are `__READ__` (Curator) and `__rlock__` (kazoo) nodes; every other contender excludes
 * them.
 */
export function isReader(child: string): boolean {
  return child.includes(READ_LOCK_NAME) || child.includes(KAZOO_READ_LOCK_NAME);
}

/**
 * Inverse of encodeLockName for listing: the full key of a lock directory's name, or undefined
 * when the name is not one encodeLockName produces (a '%' not followed by two hex digits, bytes
 * that are not UTF-8): such a directory was made by another tool with its own naming.
 */
export function decodeLockName(name: string): string | undefined {
  if (!name.includes('%')) return /^\.+$/.test(name) ? undefined : name;
  const bytes: number[] = [];
  for (let i = 0; i < name.length;) {
    if (name[i] === '%') {
      const hex = name.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) return undefined;
      bytes.push(parseInt(hex, 16));
      i += 3;
    } else {
      bytes.push(...Buffer.from(name[i], 'utf8'));
      i++;
    }
  }
  const key = Buffer.from(bytes).toString('utf8');
  try {
    return encodeLockName(key) === name ? key : undefined;
  } catch {
    return undefined; // too long for our encoding: not one of ours
  }
}

export type Standing =
  | { readonly held: true }
  | { readonly held: false; readonly watch: string }
  | { readonly held: false; readonly missing: true };

/**
 * Curator's predicates over the sorted children. Exclusive: held at index 0, else watch the
 * node just before ours (one watcher per node: a release wakes exactly one waiter, no herd).
 * Shared: held when no writer sorts before ours, else watch the earliest such writer.
 */
export function standing(sorted: readonly string[], ours: string, exclusive: boolean): Standing {
  const index = sorted.indexOf(ours);
  if (index < 0) return { held: false, missing: true };
  if (exclusive) return index === 0 ? { held: true } : { held: false, watch: sorted[index - 1] };
  for (let i = 0; i < index; i++)
    if (!isReader(sorted[i])) return { held: false, watch: sorted[i] };
  return { held: true };
}
