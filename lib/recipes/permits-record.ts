/**
 * Holders of a semaphore of permit locks agree on N, as every native semaphore makes them: a
 * request whose N differs from the holders' is refused (InvalidLockOptionsError naming `permits`).
 * Permit locks alone cannot tell: holders of 3 take permits 0..2 and a request of 2 finds permit 0
 * or 1 free.
 *
 * So each permit holder also holds the key's permits record `<key>#n` (no longer than permit 0's
 * key) in shared mode, under its owner token tagged with its N (`<owner>.n<N>`), and after taking
 * it reads the record's holders (the backend's inspect()): another N among them refuses the
 * request, which gives back its permit and its share; a request that finds every permit busy reads
 * it too. Whichever of two disagreeing requests reads second sees the first, so they never both
 * pass. Costs a shared acquire and an inspect per grant. Needs shared locks and inspect(); a
 * backend without them keeps the permit rule (at most the largest N hold at once).
 */
import type { GrantDriver } from '../core/acquire/pipeline-context';
import type { LockHandle } from '../core/lease/lock-handle';
import type { RecipeHost } from '../core/recipe-host';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import type { BackendLock, LockBackend } from '../interfaces/lock-backend.interface';
import type { LockOptions } from '../interfaces/lock-options.interface';

/** The permits record of semaphore `key` (beside its permits `<key>#<i>`). */
export function permitsKey(key: string): string {
  return `${key}#n`;
}

const TAG = /\.n(\d+)$/;

/** The owner token under which a holder of `permits` holds the record. */
const tagged = (owner: string, permits: number) => `${owner}.n${permits}`;

const drivers = new WeakMap<LockBackend, Map<number, GrantDriver>>();

/** The record's grant driver for holders of `permits`: the backend's, with the owner tagged. */
function recordDriver(backend: LockBackend, permits: number): GrantDriver {
  let byN = drivers.get(backend);
  if (!byN) drivers.set(backend, (byN = new Map()));
  let driver = byN.get(permits);
  if (!driver) {
    const tag = (l: BackendLock): BackendLock => ({
      key: l.key,
      owner: tagged(l.owner, permits),
      mode: l.mode,
      ttl: l.ttl,
    });
    driver = {
      // The request's signal and onLost are getters (acquisition.ts): copied by name, not spread.
      tryAcquire: (r) => backend.tryAcquire({ ...tag(r), signal: r.signal, onLost: r.onLost }),
      holder: {
        renew: (locks) => backend.renew(locks.map(tag)),
        release: (lock) => backend.release(tag(lock)),
      },
      reentry: `\u0000#permits${permits}`,
      manyHolders: true,
    };
    byN.set(permits, driver);
  }
  return driver;
}

/**
 * Takes the permits record beside `permit` and checks the holders' N: the handles to hold (the
 * permit first), or InvalidLockOptionsError after giving both back.
 */
export async function agreeOnPermits(
  host: RecipeHost,
  args: { key: string; permits: number; backend: string; permit: LockHandle; once: LockOptions },
): Promise<LockHandle[]> {
  const { key, permits, permit } = args;
  const backend = host.backend(args.backend);
  if (typeof backend.inspect !== 'function' || !backend.capabilities.shared) return [permit];
  let record: LockHandle | undefined;
  try {
    record = await host.acquireOne({
      key: permitsKey(key),
      options: { ...args.once, mode: 'shared' },
      driver: recordDriver(backend, permits),
    });
    await checkPermitsRecord(host, key, permits, backend);
    return [permit, record];
  } catch (error) {
    await Promise.all([permit.release(), record?.release()]).catch(() => undefined);
    throw error;
  }
}

/**
 * Reads the permits record's holders: InvalidLockOptionsError when one holds with another N. Also
 * run when every permit is busy, so a request of the wrong N is refused rather than left to wait.
 */
export async function checkPermitsRecord(
  host: RecipeHost,
  key: string,
  permits: number,
  backend: LockBackend,
): Promise<void> {
  if (typeof backend.inspect !== 'function' || !backend.capabilities.shared) return;
  const seen = await backend.inspect(host.keyPrefix + permitsKey(key));
  for (const h of seen.holders) {
    const theirs = TAG.exec(h.owner ?? '')?.[1];
    if (theirs !== undefined && Number(theirs) !== permits)
      throw new InvalidLockOptionsError(
        'permits',
        permits,
        `${theirs} (the permits this semaphore's holders use)`,
        key,
      );
  }
}
