export { MySqlLockBackend } from './mysql.backend';
export type { MySqlLockBackendOptions, MySqlPoolLike, MySqlConnectionLike } from './mysql.backend';
export { mysqlDdl } from './mysql.schema';
