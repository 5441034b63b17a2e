/**
 * How long a backend's close() waits for a server to answer its goodbye (QUIT, a pool's end, a
 * session's revoke) before it drops the connection instead: a stopped or unreachable server must
 * not keep shutdown waiting.
 */
export const CLOSE_TIMEOUT_MS = 2_000;

/**
 * `op`'s outcome, or 'late' once `ms` passed first (then `op` goes on, its failure swallowed).
 * Never rejects: a close step that fails or hangs has done what it could.
 */
export function within(op: Promise<unknown>, ms: number): Promise<'done' | 'failed' | 'late'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  const settled = op.then(
    () => 'done' as const,
    () => 'failed' as const,
  );
  return Promise.race([settled, late]).finally(() => clearTimeout(timer));
}
