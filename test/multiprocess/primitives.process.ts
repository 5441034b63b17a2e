/**
 * One application process for the multi-process primitives test. argv: backend name (a torture
 * registry entry), its client config as JSON, ttl. Commands from the parent:
 * - `{ type: 'semaphore', key, permits, loops, rounds, holdMs }`: `loops` concurrent callers, each
 *   taking the semaphore `rounds` times; inside, it reports `enter` and `exit` and waits for the
 *   parent's ack of each, so the parent's count of holders is exact (an exit is counted before the
 *   permit is released, an enter after it is granted).
 * - `{ type: 'transfer', accounts, loops, rounds }`: `loops` concurrent callers, each moving a
 *   random amount between two random accounts `rounds` times under the multi-key lock of both,
 *   the keys given in a random order; balances live in the parent (`get`, then `set` with the
 *   versions read, so the parent sees any write based on a stale read: a lost update).
 * Answers `{ type: 'done', what, count }` or an `error` message.
 */
import { LockEngine } from '../../lib/core/lock-engine';
import { runHolder, type HolderMessage } from '../support/holder-harness';
import { TORTURE_BACKENDS, type BackendName } from '../torture/torture.backends';

const [name, configJson, ttlText] = process.argv.slice(2);
const ttl = Number(ttlText);

runHolder(async (channel) => {
  const { backend } = await TORTURE_BACKENDS[name as BackendName]!.connect(
    JSON.parse(configJson),
    ttl,
  );
  const engine = new LockEngine({ backend, keyPrefix: 'mp:', defaults: { ttl } });
  let next = 0;
  const pending = new Map<number, (reply: HolderMessage) => void>();
  const ask = (message: HolderMessage): Promise<HolderMessage> =>
    new Promise((resolve) => {
      const id = next++;
      pending.set(id, resolve);
      channel.send({ ...message, id });
    });
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const pick = (n: number) => Math.floor(Math.random() * n);

  const semaphore = async (c: HolderMessage) => {
    let count = 0;
    const caller = async () => {
      for (let i = 0; i < Number(c.rounds); i++) {
        await engine.withLock(
          String(c.key),
          async () => {
            await ask({ type: 'enter' });
            await pause(Number(c.holdMs));
            await ask({ type: 'exit' });
            count++;
          },
          { permits: Number(c.permits), wait: 120_000 },
        );
      }
    };
    await Promise.all(Array.from({ length: Number(c.loops) }, caller));
    return count;
  };

  const transfer = async (c: HolderMessage) => {
    const accounts = Number(c.accounts);
    let count = 0;
    const caller = async () => {
      for (let i = 0; i < Number(c.rounds); i++) {
        const from = pick(accounts);
        const to = (from + 1 + pick(accounts - 1)) % accounts;
        const amount = 1 + pick(5);
        const keys = [`account:${from}`, `account:${to}`];
        if (Math.random() < 0.5) keys.reverse();
        await engine.withLock(
          keys,
          async () => {
            const read = (await ask({ type: 'get', accounts: [from, to] })) as unknown as {
              balances: number[];
              versions: number[];
            };
            await pause(1);
            await ask({
              type: 'set',
              accounts: [from, to],
              balances: [read.balances[0] - amount, read.balances[1] + amount],
              versions: read.versions,
            });
            count++;
          },
          { wait: 120_000 },
        );
      }
    };
    await Promise.all(Array.from({ length: Number(c.loops) }, caller));
    return count;
  };

  channel.onCommand((c) => {
    if (c.type === 'ack') {
      const resolve = pending.get(Number(c.id));
      pending.delete(Number(c.id));
      resolve?.(c);
      return;
    }
    const work = c.type === 'semaphore' ? semaphore(c) : transfer(c);
    work.then(
      (count) => channel.send({ type: 'done', what: c.type, count }),
      (error: unknown) => channel.send({ type: 'error', error: String(error) }),
    );
  });
  channel.send({ type: 'ready' });
});
