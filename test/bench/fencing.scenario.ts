import Redis from 'ioredis';
import { createPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { MySqlFencedStore, PostgresFencedStore, RedisFencedStore } from '../../lib/fencing';
import { MariaDbServer } from '../support/mariadb-server';
import { PostgresServer } from '../support/postgres-server';
import { RedisServer } from '../support/redis-server';
import { fmtMs, mdTable, summarize } from './bench.stats';

/**
 * What a fenced write costs over the same write without the fence, one client, sequential round
 * trips on loopback, private servers (`npm run bench -- --scenarios=fencing`, or this file alone,
 * under a minute). Rows alternate: each round runs a block of plain writes and a block of fenced
 * ones, the order flipping every round, so drift (CPU frequency, other load) hits both alike.
 * - Redis: `SET k v` vs RedisFencedStore.set(k, token, v) (EVALSHA of the fenced script);
 * - PostgreSQL, MariaDB: `UPDATE bench SET value = ? WHERE id = ?` vs PostgresFencedStore /
 *   MySqlFencedStore.update() of the same row (the fence column compared and set in the same
 *   statement).
 * Every fenced write presents a new, higher token (the fence record is rewritten each time: the
 * dearer case; a holder writing again with its token skips that write). Reports the median
 * latency per write over all rounds, p99, and fenced / plain.
 */
export interface FencingRow {
  system: string;
  write: string;
  plainMedianMs: number;
  fencedMedianMs: number;
  plainP99Ms: number;
  fencedP99Ms: number;
  ratio: number;
  writes: number;
}

const ROUNDS = 8;

async function alternate(
  system: string,
  write: string,
  perBlock: number,
  plain: (i: number) => Promise<unknown>,
  fenced: (i: number) => Promise<unknown>,
): Promise<FencingRow> {
  const samples = { plain: [] as number[], fenced: [] as number[] };
  const block = async (kind: 'plain' | 'fenced', round: number, keep: boolean) => {
    const fn = kind === 'plain' ? plain : fenced;
    for (let i = 0; i < perBlock; i++) {
      const t = performance.now();
      await fn(round * perBlock + i);
      if (keep) samples[kind].push(performance.now() - t);
    }
  };
  await block('plain', 0, false); // warm-up: connections, script cache, JIT
  await block('fenced', 0, false);
  for (let round = 1; round <= ROUNDS; round++) {
    const order: ('plain' | 'fenced')[] = round % 2 ? ['plain', 'fenced'] : ['fenced', 'plain'];
    for (const kind of order) await block(kind, round, true);
  }
  const p = summarize(samples.plain);
  const f = summarize(samples.fenced);
  return {
    system,
    write,
    plainMedianMs: p.median,
    fencedMedianMs: f.median,
    plainP99Ms: p.p99,
    fencedP99Ms: f.p99,
    ratio: f.median / p.median,
    writes: p.n + f.n,
  };
}

async function redisRows(): Promise<FencingRow[]> {
  const server = await RedisServer.start();
  const client = new Redis({ host: '127.0.0.1', port: server.port });
  const store = new RedisFencedStore({ client });
  try {
    const plain = (i: number) => client.set('bench:plain', String(i));
    return [
      await alternate('Redis', 'SET, a new token each write', 2_000, plain, (i) =>
        store.set('bench:fenced', BigInt(i + 1), String(i)),
      ),
      // A holder's further writes under one grant: the fence record is only read.
      await alternate('Redis', 'SET, the same token', 2_000, plain, (i) =>
        store.set('bench:same', 1n, String(i)),
      ),
    ];
  } finally {
    client.disconnect();
    await server.destroy();
  }
}

type Sql = { query(sql: string): Promise<unknown>; end(): Promise<void> };

async function sqlRow(kind: 'postgres' | 'mysql'): Promise<FencingRow> {
  const server = kind === 'postgres' ? await PostgresServer.start() : await MariaDbServer.start();
  const pg = kind === 'postgres' ? new Pool({ ...server.connection, max: 1 }) : undefined;
  const my =
    kind === 'mysql' ? createPool({ ...server.connection, connectionLimit: 1 }) : undefined;
  const pool = (pg ?? my) as unknown as Sql;
  const store = pg
    ? new PostgresFencedStore({ client: pg })
    : new MySqlFencedStore({ client: my! });
  const plainSql =
    kind === 'postgres'
      ? 'UPDATE bench SET value = $1 WHERE id = $2'
      : 'UPDATE bench SET value = ? WHERE id = ?';
  const plain = (i: number) => (pg ? pg.query(plainSql, [i, 1]) : my!.query(plainSql, [i, 1]));
  try {
    await pool.query('CREATE TABLE bench (id INT PRIMARY KEY, value INT NOT NULL)');
    await pool.query(store.columnDdl('bench'));
    await pool.query('INSERT INTO bench (id, value) VALUES (1, 0), (2, 0)');
    return await alternate(
      kind === 'postgres' ? 'PostgreSQL' : 'MariaDB',
      'UPDATE one row, a new token each write',
      500,
      plain,
      (i) => store.update({ table: 'bench', set: { value: i }, where: { id: 2 } }, BigInt(i + 1)),
    );
  } finally {
    await pool.end();
    await server.destroy();
  }
}

export async function runFencing(): Promise<FencingRow[]> {
  return [...(await redisRows()), await sqlRow('postgres'), await sqlRow('mysql')];
}

export function fencingTable(rows: FencingRow[]): string {
  return mdTable(
    [
      'system',
      'write',
      'plain median',
      'fenced median',
      'plain p99',
      'fenced p99',
      'fenced / plain',
      'writes',
    ],
    rows.map((r) => [
      r.system,
      r.write,
      `${fmtMs(r.plainMedianMs)} ms`,
      `${fmtMs(r.fencedMedianMs)} ms`,
      `${fmtMs(r.plainP99Ms)} ms`,
      `${fmtMs(r.fencedP99Ms)} ms`,
      `${r.ratio.toFixed(2)}×`,
      String(r.writes),
    ]),
  );
}

if (require.main === module) {
  const t0 = performance.now();
  runFencing().then(
    (rows) => {
      console.log(fencingTable(rows));
      console.log(`\n(${((performance.now() - t0) / 1000).toFixed(1)} s, node ${process.version})`);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
