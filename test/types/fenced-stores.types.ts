/**
 * Type tests for the fenced stores, compiled by `npm run typecheck`: the stores type their
 * drivers structurally (so the published .d.ts import no optional peer), and the real clients
 * must still fit those shapes. Nothing here runs.
 */
import { Cluster, Redis } from 'ioredis';
import type { Pool as MySqlPool, PoolConnection } from 'mysql2/promise';
import type { Pool as PgPool, PoolClient, Client as PgClient } from 'pg';
import { MySqlFencedStore, PostgresFencedStore, RedisFencedStore } from '../../lib/fencing';

export function realClientsFit(
  redis: Redis,
  cluster: Cluster,
  mysqlPool: MySqlPool,
  mysqlConnection: PoolConnection,
  pgPool: PgPool,
  pgPoolClient: PoolClient,
  pgClient: PgClient,
): unknown[] {
  return [
    new RedisFencedStore({ client: redis }),
    new RedisFencedStore({ client: cluster }),
    new MySqlFencedStore({ client: mysqlPool, table: 'accounts' }),
    new MySqlFencedStore({ client: mysqlConnection, table: 'accounts' }),
    new PostgresFencedStore({ client: pgPool, table: 'accounts' }),
    new PostgresFencedStore({ client: pgPoolClient, table: 'accounts' }),
    new PostgresFencedStore({ client: pgClient, table: 'accounts' }),
  ];
}
