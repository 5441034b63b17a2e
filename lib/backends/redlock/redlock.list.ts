import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { heldOn, listHeldKeys, type RedisScanLike } from '../redis-client';
import type { Masters } from './redlock.masters';
import { gather } from './redlock.quorum';

/** How long one list() may SCAN (ms): what it found by then is its answer. */
export const LIST_BUDGET_MS = 1_000;

/**
 * The full keys under `prefix` a majority of masters hold now, at most `limit`: SCAN every master
 * for holder keys (a key held on a majority is on at least one answering master whenever a
 * majority answers), then each page checked on every master at once (HELD), kept when a quorum
 * says held. A minority of masters failing is tolerated; more, and the listing fails.
 */
export async function listRedlockKeys(
  m: Masters,
  prefix: string,
  limit: number,
  timeoutMs: number,
): Promise<string[]> {
  let failed = 0;
  let firstError: unknown;
  // Each master's SCAN is bounded by `timeoutMs`, and a master that failed or went silent once is
  // skipped for the rest of the listing: a stopped master never answers, and waiting on it would
  // fail the whole call though a majority answers.
  const nodes: RedisScanLike[] = m.clients.map((c) => {
    let down = false;
    const fail = (error: unknown): [string, string[]] => {
      if (!down) failed++;
      down = true;
      firstError ??= error;
      return ['0', []];
    };
    return {
      scan: async (cursor, ...args) => {
        if (down) return ['0', []];
        let timer: NodeJS.Timeout | undefined;
        const silent = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`SCAN got no answer within ${timeoutMs} ms`)),
            timeoutMs,
          );
        });
        try {
          return await Promise.race([
            (c as unknown as RedisScanLike).scan(cursor, ...args),
            silent,
          ]);
        } catch (error) {
          return fail(error);
        } finally {
          clearTimeout(timer);
        }
      },
    };
  });
  const held = async (keys: string[]): Promise<boolean[]> => {
    const outcomes = await gather(
      m.clients.length,
      (i) => heldOn(m.clients[i], keys),
      () => false,
      timeoutMs,
    );
    const answers = outcomes.flatMap((o) => (o?.ok ? [o.value] : []));
    if (answers.length < m.quorum) {
      const error = outcomes.find((o) => o && !o.ok);
      throw unavailable(m, answers.length, error && !error.ok ? error.error : undefined);
    }
    return keys.map((_, j) => answers.filter((a) => a[j]).length >= m.quorum);
  };
  const keys = await listHeldKeys(nodes, prefix, limit, Date.now() + LIST_BUDGET_MS, held);
  if (failed > m.clients.length - m.quorum)
    throw unavailable(m, m.clients.length - failed, firstError);
  return keys;
}

function unavailable(m: Masters, answered: number, cause: unknown): LockBackendUnavailableError {
  return new LockBackendUnavailableError(
    'redlock',
    `list: only ${answered} of ${m.clients.length} masters answered, a majority of ${m.quorum} is needed`,
    { cause },
  );
}
