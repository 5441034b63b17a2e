import type { LockHolderInfo, LockInspection } from '../../interfaces/lock-backend.interface';

/** One server's answer to the INSPECT script, parsed. */
export interface ServerLockView {
  readonly writer: string | undefined;
  readonly writerTtl: number | undefined;
  /** owner -> ms left */
  readonly readers: ReadonlyMap<string, number>;
  readonly fence: bigint | undefined;
  readonly queued: number;
}

export function parseInspect(reply: unknown): ServerLockView {
  const [writer, pttl, flat, fence, queued] = reply as [string, number, string[], string, number];
  const readers = new Map<string, number>();
  for (let i = 0; i + 1 < flat.length; i += 2) readers.set(flat[i], Number(flat[i + 1]));
  return {
    writer: writer || undefined,
    writerTtl: writer && Number(pttl) >= 0 ? Number(pttl) : undefined,
    readers,
    fence: fence ? BigInt(fence) : undefined,
    queued: Number(queued),
  };
}

/** The LockInspection of one server's view. */
export function toInspection(key: string, view: ServerLockView, waiters?: number): LockInspection {
  const holders: LockHolderInfo[] = view.writer
    ? [{ mode: 'exclusive', owner: view.writer, remainingTtl: view.writerTtl }]
    : [...view.readers].map(([owner, ms]) => ({
        mode: 'shared' as const,
        owner,
        remainingTtl: ms,
      }));
  return {
    key,
    held: holders.length > 0,
    mode: holders[0]?.mode,
    holders,
    fencingToken: view.fence,
    waiters,
  };
}
