export { MySqlLockBackend } from './mysql.backend';
export type { MySqlLockBackendOptions, MySqlPoolLike, MySqlConnectionLike } from './mysql.options';
export { mysqlDdl } from './mysql.schema';
