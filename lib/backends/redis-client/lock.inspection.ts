import { holderMetadata } from '../../backend-kit/holder-data';
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

/** The HOLDERS script's answer as owner -> holder data (an exclusive and any shared holders). */
export function storedHolders(
  reply: unknown,
  into = new Map<string, string>(),
): Map<string, string> {
  const [exclusive, flat] = reply as [string, string[]];
  const bar = exclusive.indexOf('|');
  if (bar > 0) into.set(exclusive.slice(0, bar), exclusive.slice(bar + 1));
  for (let i = 0; i + 1 < flat.length; i += 2) into.set(flat[i], flat[i + 1]);
  return into;
}

/** `holders` with the identity each one's grant stored (metadata host, pid, instance). */
export function withIdentities(
  holders: readonly LockHolderInfo[],
  stored: ReadonlyMap<string, string>,
): LockHolderInfo[] {
  return holders.map((h) => {
    const metadata = h.owner === undefined ? undefined : holderMetadata(stored.get(h.owner));
    return metadata ? { ...h, metadata } : h;
  });
}
