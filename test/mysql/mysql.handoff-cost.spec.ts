import type { Pool } from 'mysql2/promise';
import { eventually } from '../support/eventually';
import { mysqlWaiters } from './mysql-waiters.fixture';

/**
 * Issue 19 (mysql2): a handoff costs about one winning attempt. Six waiters of six backends (own
 * pools: to the server, six processes) queue behind a holder; each grantee holds 20 ms. Counted on
 * the real mysql2 pools (a wrapper counting statements, no mock): acquire attempts (the statement
 * that locks the key's mutex row) per handoff. Before, every release notify made every process's
 * waiter re-attempt, so a handoff cost about one attempt per waiting process and more (7.0 per
 * handoff here on the old code, 48.7 statements); now only the first in line (and sometimes the
 * second) attempts, the others read their place with one lock-free statement.
 */
describe('mysql (MariaDB 10.11): cost of a handoff with waiters queued in six processes', () => {
  const WAITERS = 6;
  const count = { attempts: 0, statements: 0, on: false };
  const counted = (pool: Pool) => ({
    pool: pool.pool,
    getConnection: async () => {
      const conn = await pool.getConnection();
      const note = (sql: string) => {
        if (!count.on) return;
        count.statements++;
        if (sql.includes('UPDATE lock_key = lock_key')) count.attempts++;
      };
      return {
        query: (sql: string, values?: unknown) => (note(sql), conn.query(sql, values as never)),
        execute: (sql: string, values?: unknown) => (note(sql), conn.execute(sql, values as never)),
        release: () => conn.release(),
        destroy: () => conn.destroy(),
      };
    },
  });
  const { engine, tickets } = mysqlWaiters((pool) => counted(pool) as never);

  it('takes at most 2.5 acquire attempts per handoff', async () => {
    const holder = engine();
    const held = await holder.acquire('cost:1');
    const waiters = Array.from({ length: WAITERS }, () => engine());
    let gate: () => void = () => undefined;
    const opened = new Promise<void>((resolve) => (gate = resolve));
    const done = waiters.map((w) =>
      w.withLock('cost:1', async () => {
        await opened; // nobody is granted before every waiter queued
        await new Promise((resolve) => setTimeout(resolve, 20)); // the holder's work
      }),
    );
    await eventually(async () => (await tickets('cost:1')) === WAITERS);
    count.on = true;
    gate();
    await held.release();
    await Promise.all(done);
    count.on = false;
    const perHandoff = count.attempts / WAITERS;
    console.log(
      `handoffs ${WAITERS}: attempts/handoff ${perHandoff.toFixed(2)}, statements/handoff ${(count.statements / WAITERS).toFixed(1)}`,
    );
    expect(perHandoff).toBeLessThanOrEqual(2.5);
  });
});
