import { heldOn, listHeldKeys, scanNodes } from '../redis-client';
import type { ResolvedRedisOptions } from './redis.options';

/** How long one list() may SCAN (ms): what it found by then is its answer. */
export const LIST_BUDGET_MS = 1_000;

/**
 * The full keys under `prefix` held now, at most `limit`: SCAN (every master of a Cluster) for
 * holder keys, each page of candidates confirmed by one HELD batch (a writer, a live reader or a
 * live permit). Bounded in time (LIST_BUDGET_MS): an answer the budget cut short is marked partial.
 */
export async function listRedisKeys(
  o: ResolvedRedisOptions,
  prefix: string,
  limit: number,
): Promise<string[]> {
  const client = await o.source.get();
  return listHeldKeys(scanNodes(client), prefix, limit, Date.now() + LIST_BUDGET_MS, (keys) =>
    heldOn(client, keys),
  );
}
