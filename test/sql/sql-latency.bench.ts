/**
 * Loopback latency of the SQL backends (a measurement for the README, not a test: nothing is
 * asserted). Run: npx ts-node --transpile-only test/sql/sql-latency.bench.ts
 * Starts a private MariaDB and PostgreSQL, then measures per backend:
 *  - cycle: uncontended acquire + release through the engine, sequential;
 *  - handoff (same process): a waiter on the same backend gets the lock after the holder's release;
 *  - handoff (other process): the waiter uses another backend over another pool (MySQL: polling,
 *    PostgreSQL: NOTIFY).
 */
import { createPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { MySqlLockBackend } from '../../lib/backends/mysql';
import { PostgresLockBackend } from '../../lib/backends/postgres';
import { LockEngine } from '../../lib/core/lock-engine';
import type { LockBackend } from '../../lib/interfaces/lock-backend.interface';
import { MariaDbServer } from '../support/mariadb-server';
import { PostgresServer } from '../support/postgres-server';

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const fmt = (xs: number[]) =>
  `p50 ${pct(xs, 50).toFixed(2)} ms, p90 ${pct(xs, 90).toFixed(2)} ms, p99 ${pct(xs, 99).toFixed(2)} ms (n=${xs.length})`;

async function measure(name: string, make: () => LockBackend): Promise<void> {
  const a = new LockEngine({ backend: make(), keyPrefix: 'bench:' });
  const b = new LockEngine({ backend: make(), keyPrefix: 'bench:' });
  for (let i = 0; i < 50; i++) await (await a.acquire(`warm${i % 5}`)).release();
  const cycle: number[] = [];
  for (let i = 0; i < 500; i++) {
    const t = performance.now();
    const h = await a.acquire('cycle');
    await h.release();
    cycle.push(performance.now() - t);
  }
  console.log(`${name} cycle (acquire + release):     ${fmt(cycle)}`);
  for (const [label, waiter] of [
    ['same process', a],
    ['other process', b],
  ] as const) {
    const handoff: number[] = [];
    for (let i = 0; i < 100; i++) {
      const h = await a.acquire('handoff');
      let released = 0;
      const waiting = waiter.runInScope(() => waiter.acquire('handoff', { wait: 10_000 }));
      await new Promise((r) => setTimeout(r, 20)); // let the waiter find it busy and go to sleep
      released = performance.now();
      await h.release();
      const next = await waiting;
      handoff.push(performance.now() - released);
      await next.release();
    }
    console.log(`${name} handoff (${label}): ${fmt(handoff)}`);
  }
  await Promise.all([a.close(), b.close()]);
}

async function main(): Promise<void> {
  const maria = await MariaDbServer.start();
  const pg = await PostgresServer.start();
  const mysqlPools: ReturnType<typeof createPool>[] = [];
  const pgPools: Pool[] = [];
  try {
    await measure('mysql   ', () => {
      const pool = createPool({ ...maria.connection, connectionLimit: 4 });
      mysqlPools.push(pool);
      return new MySqlLockBackend({ client: pool });
    });
    await measure('postgres', () => {
      const pool = new Pool({ ...pg.connection, max: 4 });
      pool.on('error', () => undefined);
      pgPools.push(pool);
      return new PostgresLockBackend({ client: pool });
    });
  } finally {
    await Promise.all([...mysqlPools.map((p) => p.end()), ...pgPools.map((p) => p.end())]);
    await Promise.all([maria.destroy(), pg.destroy()]);
  }
}

void main();
