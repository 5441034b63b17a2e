export { PostgresLockBackend } from './postgres.backend';
export type { PostgresLockBackendOptions, PgPoolLike, PgPoolClientLike, PgQueryResultLike } from './postgres.backend';
export { postgresDdl } from './postgres.schema';
