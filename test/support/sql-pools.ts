import { createPool, type Pool as MySqlPool } from 'mysql2/promise';
import { Pool } from 'pg';
import { MariaDbServer } from './mariadb-server';
import { PostgresServer } from './postgres-server';

/** A private server and pools on it, made on demand (4 connections each), all ended by close(). */
export interface ServerPools<P> {
  readonly connection: Record<string, unknown>;
  pool(): P;
  close(): Promise<void>;
}

export async function mariaDbPools(): Promise<ServerPools<MySqlPool>> {
  const server = await MariaDbServer.start();
  const pools: MySqlPool[] = [];
  return {
    connection: server.connection,
    pool: () => {
      const p = createPool({ ...server.connection, connectionLimit: 4 });
      pools.push(p);
      return p;
    },
    close: async () => {
      await Promise.all(pools.map((p) => p.end()));
      await server.destroy();
    },
  };
}

export async function postgresPools(): Promise<ServerPools<Pool>> {
  const server = await PostgresServer.start();
  const pools: Pool[] = [];
  return {
    connection: server.connection,
    pool: () => {
      const p = new Pool({ ...server.connection, max: 4 });
      p.on('error', () => undefined);
      pools.push(p);
      return p;
    },
    close: async () => {
      await Promise.all(pools.map((p) => p.end()));
      await server.destroy();
    },
  };
}
