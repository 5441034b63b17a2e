import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { runIdOf } from './redlock.options';
import { gather, type RedlockClientLike } from './redlock.quorum';
import type { RedlockSubscriptions } from './redlock.subscriptions';

/** The masters, once known (at construction for `clients`, on first use for `clientFactory`). */
export interface Masters {
  readonly clients: readonly RedlockClientLike[];
  readonly quorum: number;
  /** Masters that let an acquire round time out and have not answered anything since. */
  readonly silent: boolean[];
  readonly subscriptions: RedlockSubscriptions | undefined;
  readonly distinct: Promise<void>;
  checked: boolean;
  duplicate: InvalidLockOptionsError | undefined;
}

/**
 * Per acquire call (keyed by its signal): how many attempts ran, and whether the last one split the
 * vote.
 */
export interface Round {
  attempts: number;
  split: boolean;
  /** A waiter's mark may be live on the masters (see UNMARK); undefined: never marked. */
  marked?: boolean;
}

/**
 * Asks every master for its run_id (answers within `timeoutMs`); two clients of one server set
 * `m.duplicate`, which makes every later call fail clearly instead of counting one master twice.
 */
export async function checkDistinct(m: Masters, timeoutMs: number): Promise<void> {
  const outcomes = await gather(
    m.clients.length,
    async (i) => {
      const info = m.clients[i].info;
      return typeof info === 'function'
        ? runIdOf(await info.call(m.clients[i], 'server'))
        : undefined;
    },
    () => false,
    timeoutMs,
  );
  m.checked = true;
  const byId = new Map<string, number>();
  outcomes.forEach((o, i) => {
    if (!o?.ok || !o.value || m.duplicate) return;
    const first = byId.get(o.value);
    if (first !== undefined) {
      m.duplicate = new InvalidLockOptionsError(
        `clients[${i}]`,
        `run_id ${o.value}`,
        `a connection to a server other than clients[${first}] (both reach the same redis-server, which would count one master twice toward the majority)`,
      );
    }
    byId.set(o.value, i);
  });
}
