export { PostgresLockBackend } from './postgres.backend';
export type {
  PostgresLockBackendOptions,
  PgPoolLike,
  PgPoolClientLike,
  PgQueryResultLike,
} from './postgres.options';
export { postgresDdl } from './postgres.schema';
