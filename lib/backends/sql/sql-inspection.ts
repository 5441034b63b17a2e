import { holderMetadata, toBigInt } from '../../backend-kit';
import type { LockHolderInfo, LockInspection } from '../../interfaces/lock-backend.interface';
import type { HolderRow } from './sql-lock.rules';
import { QUEUED } from './sql-tickets';

/** A holder row as inspect reads it: the decision's fields plus the grant's fence. */
export interface InspectedRow extends HolderRow {
  readonly fence: unknown;
  /** The grant's holder data (host, pid, instance); null where the table has no holder column. */
  readonly holder?: string | null;
}

/**
 * What `inspect(key)` reports from a key's rows, read in ONE statement without locking them (a
 * snapshot; never blocks a holder): live holder rows are the holders, with their remaining ttl by
 * the SERVER's clock (a semaphore's permits included); the largest fence among all holder rows
 * (expired ones included) is the last token issued for the key, and none is known once every row
 * is gone. Live tickets are the waiters (one per waiting process: its first in line); undefined
 * where the table takes no tickets.
 */
export function toInspection(
  key: string,
  rows: readonly InspectedRow[],
  backend: string,
  tickets: boolean,
): LockInspection {
  const holders: LockHolderInfo[] = [];
  let fencingToken: bigint | undefined;
  let waiters = 0;
  for (const row of rows) {
    if (row.mode === (QUEUED as string)) {
      if (row.leftUs > 0) waiters++;
      continue;
    }
    const fence = toBigInt(row.fence, backend);
    if (fencingToken === undefined || fence > fencingToken) fencingToken = fence;
    if (row.leftUs > 0)
      holders.push({
        // A semaphore's permits are exclusive grants (as the memory backend reports them).
        mode: row.mode === 'semaphore' ? 'exclusive' : row.mode,
        owner: row.owner,
        remainingTtl: Math.ceil(row.leftUs / 1000),
        metadata: holderMetadata(row.holder),
      });
  }
  const mode =
    holders.length === 0
      ? undefined
      : holders.some((h) => h.mode === 'exclusive')
        ? 'exclusive'
        : 'shared';
  const held = holders.length > 0;
  return { key, held, mode, holders, fencingToken, waiters: tickets ? waiters : undefined };
}
