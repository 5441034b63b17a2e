import type { RedisClientLike } from '../redis-client';

/**
 * Fan-out to N independent masters with an early decision. Redlock must never wait for the slowest
 * master: one SIGSTOPped or partitioned minority would otherwise stall every acquire and renewal. A
 * round ends as soon as its outcome is known (a majority agreed, or a majority can no longer
 * agree), when its time budget runs out, or when the caller gives up; answers that come later are
 * ignored (commands on one connection run in order, so a later release still lands after a late
 * acquire).
 */
export type Outcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: unknown }
  | undefined;

/** The part of an ioredis `Redis` client that Redlock uses on each master. */
export interface RedlockClientLike extends RedisClientLike {
  readonly options?: {
    readonly host?: string;
    readonly port?: number;
    readonly path?: string;
    readonly sentinels?: unknown;
  };
}

/**
 * Starts `call(i)` for every master at once; resolves with a snapshot of the outcomes (undefined =
 * no answer yet) once `decided(outcomes)` is true, every master answered, `timeoutMs` passed or
 * `signal` aborted. Never rejects.
 */
export function gather<T>(
  count: number,
  call: (index: number) => Promise<T>,
  decided: (outcomes: readonly Outcome<T>[]) => boolean,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Outcome<T>[]> {
  const outcomes: Outcome<T>[] = new Array(count).fill(undefined);
  return new Promise((resolve) => {
    let pending = count;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', finish);
      resolve(outcomes.slice());
    };
    const timer = setTimeout(finish, Math.max(0, timeoutMs));
    signal?.addEventListener('abort', finish, { once: true });
    for (let i = 0; i < count; i++) {
      let promise: Promise<T>;
      try {
        promise = call(i);
      } catch (error) {
        promise = Promise.reject(error);
      }
      promise.then(
        (value) => settle(i, { ok: true, value }),
        (error: unknown) => settle(i, { ok: false, error }),
      );
    }
    function settle(i: number, outcome: Outcome<T>) {
      if (done) return;
      outcomes[i] = outcome;
      pending--;
      if (pending === 0 || decided(outcomes)) finish();
    }
    if (count === 0 || signal?.aborted) finish();
  });
}

/**
 * Counts of a snapshot: answers that satisfied `ok`, other answers, errors, and masters still
 * silent.
 */
export function tally<T>(outcomes: readonly Outcome<T>[], ok: (value: T) => boolean) {
  let yes = 0;
  let no = 0;
  let failed = 0;
  let silent = 0;
  let firstError: unknown;
  for (const o of outcomes) {
    if (o === undefined) silent++;
    else if (!o.ok) {
      failed++;
      firstError ??= o.error;
    } else if (ok(o.value)) yes++;
    else no++;
  }
  return { yes, no, failed, silent, answered: yes + no, firstError };
}
