/**
 * Polls `check` until it returns truthy (or throws the last error after timeoutMs). Its own file,
 * apart from the server harness, so a spec that only waits on a condition stays in the unit tier.
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  timeoutMs = 10_000,
  intervalMs = 20,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
      last = new Error('condition still false');
    } catch (error) {
      last = error;
    }
    if (Date.now() > until) throw last;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
