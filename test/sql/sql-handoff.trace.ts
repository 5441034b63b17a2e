/**
 * Traces MySQL handoffs statement by statement: `npx ts-node --transpile-only
 * test/sql/sql-handoff.trace.ts [rounds]`. A holder backend and a waiter backend (separate pools,
 * so separate sessions, as two processes would be) hand one key back and forth; every statement
 * each sends is logged with its start and end (performance.now()). Prints, per handoff, the
 * milestones from the holder's release call to the waiter's grant, then their medians. Also prints
 * the private server's innodb_flush_log_at_trx_commit and sync_binlog. Not a test; a measuring tool.
 */
import { createPool, type Pool } from 'mysql2/promise';
import { MySqlLockBackend, type MySqlPoolLike } from '../../lib/backends/mysql';
import { LockEngine } from '../../lib/core/lock-engine';
import { MariaDbServer } from '../support/mariadb-server';

interface Entry {
  who: string;
  sql: string;
  start: number;
  end: number;
}
const log: Entry[] = [];

function traced(pool: Pool, who: string): MySqlPoolLike {
  const wrap =
    (conn: { query: Function; execute: Function }, how: 'query' | 'execute') =>
    async (sql: string, values?: unknown[]) => {
      const e = { who, sql, start: performance.now(), end: 0 };
      log.push(e);
      try {
        return await (conn[how] as (s: string, v?: unknown[]) => Promise<[unknown, unknown]>).call(
          conn,
          sql,
          values,
        );
      } finally {
        e.end = performance.now();
      }
    };
  return {
    pool: pool.pool,
    getConnection: async () => {
      const conn = await pool.getConnection();
      return {
        query: wrap(conn, 'query'),
        execute: wrap(conn, 'execute'),
        release: () => conn.release(),
        destroy: () => conn.destroy(),
      };
    },
  };
}

const short = (sql: string) =>
  /GET_LOCK\(\?, \?\) AS got$/.test(sql)
    ? 'arm GET_LOCK'
    : /IS_USED_LOCK/.test(sql)
      ? 'notify GET_LOCK'
      : sql.replace(/\s+/g, ' ').slice(0, 38);

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 30);
  const server = await MariaDbServer.start();
  const pools = [0, 1].map(() => createPool({ ...server.connection, connectionLimit: 4 }));
  try {
    const [vars] = await pools[0].query(
      "SHOW VARIABLES WHERE Variable_name IN ('innodb_flush_log_at_trx_commit', 'sync_binlog', 'log_bin', 'version')",
    );
    console.log(vars);
    const engines = pools.map(
      (p, i) =>
        new LockEngine({
          backend: new MySqlLockBackend({ client: traced(p, i === 0 ? 'A' : 'B') }),
          keyPrefix: 'trace:',
          defaults: { ttl: 5_000 },
        }),
    );
    const phases = new Map<string, number[]>();
    const add = (name: string, ms: number) => phases.set(name, [...(phases.get(name) ?? []), ms]);
    for (let r = 0; r < rounds; r++) {
      const [holder, waiter] = r % 2 === 0 ? engines : [engines[1], engines[0]];
      const h = await holder.acquire('k', { wait: 5_000 });
      const waiting = waiter.acquire('k', { wait: 5_000 });
      await new Promise((res) => setTimeout(res, 30)); // the waiter is blocked on the notify lock
      const from = log.length;
      const t0 = performance.now();
      await h.release();
      const t1 = performance.now();
      const g = await waiting;
      const t2 = performance.now();
      const seen = log.slice(from);
      if (r >= 2) {
        add('release() call', t1 - t0);
        add('release() start -> grant resolved', t2 - t0);
        const ring = log.find((e) => e.sql.includes('IS_USED_LOCK') && e.end >= t0);
        if (ring) add('release() start -> notify returns', ring.end - t0);
        const firstAttempt = seen.find(
          (e) => e.sql.startsWith('SET TRANSACTION') && e.who !== seen[0]?.who && e.start > t0,
        );
        if (ring && firstAttempt)
          add('notify returns -> attempt starts', firstAttempt.start - ring.end);
        if (firstAttempt) add('attempt start -> grant resolved', t2 - firstAttempt.start);
      }
      if (r === rounds - 1) {
        for (const e of seen)
          console.log(
            `${e.who} ${(e.start - t0).toFixed(2).padStart(7)} .. ${(e.end - t0).toFixed(2).padStart(7)} ms  ${short(e.sql)}`,
          );
        console.log(`grant resolved at ${(t2 - t0).toFixed(2)} ms`);
      }
      await g.release();
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    for (const [name, xs] of phases)
      console.log(`${name.padEnd(36)} median ${median(xs).toFixed(2)} ms (n=${xs.length})`);
    await Promise.all(engines.map((e) => e.close()));
  } finally {
    await Promise.all(pools.map((p) => p.end()));
    await server.destroy();
  }
}

void main();
