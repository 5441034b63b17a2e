import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';

/**
 * The etcd key layout, shared with `etcdctl lock NAME` and Go's concurrency.Mutex: a contender of
 * lock NAME is the key `NAME/<session lease id in lowercase hex, no padding>`. Because `/`
 * separates NAME from the lease id and etcd finds contenders by the prefix `NAME/`, a NAME that
 * contained `/` would let lock `a` see the contenders of lock `a/b`. So the lock's full key is
 * encoded into NAME: `/` -> `%2F` and `%` -> `%25` (injective, and the identity for every name
 * without those two characters, so `etcdctl lock lock:order:42` meets our `lock:order:42`).
 */

/** Value of a shared (reader) contender key; any other value (etcdctl, Go: empty) is a writer. */
export const SHARED_VALUE = 'shared';

/** Encodes a lock's full key into the NAME used on etcd (see the file comment). */
export function encodeEtcdLockName(fullKey: string): string {
  return fullKey.replace(/%/g, '%25').replace(/\//g, '%2F');
}

/** `<prefix><NAME>/`: the prefix every contender of this lock lives under. */
export function etcdLockPrefix(fullKey: string, prefix = ''): string {
  if (typeof fullKey !== 'string' || fullKey.length === 0) {
    throw new InvalidLockOptionsError(
      'key',
      fullKey,
      'a non-empty string (an empty NAME would make "/" the prefix of every lock)',
    );
  }
  return `${prefix}${encodeEtcdLockName(fullKey)}/`;
}

/**
 * `<prefix><NAME>%sem/`: the prefix of semaphore NAME's permit keys. Distinct from the lock's range
 * `<prefix><NAME>/` (a lock and a semaphore of one key never see each other's contenders), and no
 * lock of ours can own it: an encoded NAME never holds `/`, and holds `%` only as `%25` or `%2F`.
 */
export function etcdSemaphorePrefix(fullKey: string, prefix = ''): string {
  return `${etcdLockPrefix(fullKey, prefix).slice(0, -1)}${SEMAPHORE_MARK}/`;
}

/** What separates NAME from a semaphore's permit keys (see etcdSemaphorePrefix). */
export const SEMAPHORE_MARK = '%sem';

/** Decodes a NAME (encodeEtcdLockName's inverse). */
export function decodeEtcdLockName(name: string): string {
  return name.replace(/%(25|2F)/g, (m) => (m === '%25' ? '%' : '/'));
}

/** A lease id (decimal string from etcd, may exceed 2^53) as etcd's Go client prints it: `%x`. */
export function leaseHex(leaseId: string | bigint): string {
  return BigInt(leaseId).toString(16);
}

/**
 * End of the key range holding every key that starts with `prefix` (prefix + 1, as etcd defines
 * it).
 */
export function prefixRangeEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

/**
 * True for `<prefix>NAME/<hex>` only. A foreign client (etcdctl, Go) may lock a name that itself
 * contains `/`, e.g. `NAME/b`, whose keys share our range; they are not contenders for NAME.
 */
export function isContenderKey(key: Buffer, lockPrefix: Buffer): boolean {
  if (key.length <= lockPrefix.length || !key.subarray(0, lockPrefix.length).equals(lockPrefix))
    return false;
  for (let i = lockPrefix.length; i < key.length; i++) {
    const c = key[i];
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}
