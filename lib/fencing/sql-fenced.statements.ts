import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';

/**
 * The SQL both fenced stores send, per dialect. Identifiers are quoted (a name may be
 * `schema.table`); values are always bound parameters; tokens are bound as decimal strings and
 * cast to BIGINT in the statement, so a token past 2^53 is compared exactly (MySQL would compare a
 * bare string with a number as a double).
 */
export type SqlDialect = 'postgres' | 'mysql';

/** The default fence table, and the default fence column of the column form. */
export const DEFAULT_FENCE_TABLE = 'lock_fences';
export const DEFAULT_FENCE_COLUMN = 'fence';

const NAME = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/** `name` (or `schema.name`) quoted for `dialect`; anything but plain identifiers is refused. */
export function quoteName(dialect: SqlDialect, name: string, option: string): string {
  const parts = typeof name === 'string' ? name.split('.') : [];
  if (parts.length === 0 || parts.length > 2 || !parts.every((p) => NAME.test(p)))
    throw new InvalidLockOptionsError(option, name, 'an identifier or schema.identifier');
  const q = dialect === 'postgres' ? '"' : '`';
  return parts.map((p) => `${q}${p}${q}`).join('.');
}

/** The fence table: one row per resource, its highest accepted token. */
export function fenceTableDdl(dialect: SqlDialect, table = DEFAULT_FENCE_TABLE): string {
  const t = quoteName(dialect, table, 'table');
  return dialect === 'postgres'
    ? `CREATE TABLE IF NOT EXISTS ${t} (resource VARCHAR(255) PRIMARY KEY, token BIGINT NOT NULL)`
    : `CREATE TABLE IF NOT EXISTS ${t} (resource VARCHAR(255) NOT NULL PRIMARY KEY, ` +
        'token BIGINT NOT NULL) ENGINE=InnoDB';
}

/** The column form's DDL: a nullable BIGINT fence column on your own table. */
export function fenceColumnDdl(
  dialect: SqlDialect,
  table: string,
  column = DEFAULT_FENCE_COLUMN,
): string {
  const t = quoteName(dialect, table, 'table');
  return `ALTER TABLE ${t} ADD COLUMN ${quoteName(dialect, column, 'fenceColumn')} BIGINT NULL`;
}

/**
 * Records `token` for a resource unless it is older than the row's (one statement; its row lock
 * is held until the caller's transaction ends, which orders concurrent holders).
 * PostgreSQL: the upsert's WHERE skips the update of a newer row, so RETURNING yields no row.
 * MySQL: a stale token leaves the row as it is and puts the highest token into the OK packet's
 * insert id (LAST_INSERT_ID(expr)); an accepted one leaves the insert id 0.
 */
export function advanceStatement(dialect: SqlDialect, table: string): string {
  const t = quoteName(dialect, table, 'table');
  return dialect === 'postgres'
    ? `INSERT INTO ${t} AS f (resource, token) VALUES ($1, $2::bigint) ` +
        'ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token ' +
        'WHERE f.token <= EXCLUDED.token RETURNING token'
    : `INSERT INTO ${t} (resource, token) VALUES (?, CAST(? AS SIGNED)) ` +
        'ON DUPLICATE KEY UPDATE token = IF(token <= VALUES(token), VALUES(token), ' +
        'LAST_INSERT_ID(token))';
}

export function highestStatement(dialect: SqlDialect, table: string): string {
  const t = quoteName(dialect, table, 'table');
  return dialect === 'postgres'
    ? `SELECT token::text AS token FROM ${t} WHERE resource = $1`
    : `SELECT CAST(token AS CHAR) AS token FROM ${t} WHERE resource = ?`;
}

/** Columns of `table` (name, lower-case data type) from information_schema, for checkSchema(). */
export function columnsStatement(
  dialect: SqlDialect,
  table: string,
): { sql: string; values: unknown[] } {
  quoteName(dialect, table, 'table');
  const [schema, name] = table.includes('.') ? table.split('.') : [undefined, table];
  const where =
    dialect === 'postgres'
      ? `table_schema = ${schema ? '$2' : 'current_schema()'} AND table_name = $1`
      : `table_schema = ${schema ? '?' : 'DATABASE()'} AND table_name = ?`;
  const values =
    dialect === 'postgres'
      ? [name, ...(schema ? [schema] : [])]
      : [...(schema ? [schema] : []), name];
  return {
    sql: `SELECT column_name AS c, LOWER(data_type) AS d FROM information_schema.columns WHERE ${where}`,
    values,
  };
}

/** What the column form updates: `set` columns where every `where` column equals its value. */
export interface FencedUpdateSpec {
  /** Your table (or schema.table). */
  table: string;
  /** Columns to set, with their values (bound parameters). */
  set: Record<string, unknown>;
  /** The row(s): column = value for each entry, ANDed. At least one. */
  where: Record<string, unknown>;
  /** The fence column (BIGINT NULL). Default 'fence'. */
  fenceColumn?: string;
}

/**
 * Statement texts by shape (dialect, table, fence, set and where columns): built and checked once.
 */
const shapes = new Map<string, { sql: string; select: string }>();
const MAX_SHAPES = 512;

/**
 * One UPDATE that writes only rows whose fence is not newer than `token`, and sets it to `token`.
 */
export function fencedUpdateStatement(
  dialect: SqlDialect,
  spec: FencedUpdateSpec,
  token: string,
): { sql: string; values: unknown[]; select: { sql: string; values: unknown[] } } {
  const sets = entries(spec.set, 'set');
  const wheres = entries(spec.where, 'where');
  const fenceColumn = spec.fenceColumn ?? DEFAULT_FENCE_COLUMN;
  const key = [
    dialect,
    spec.table,
    fenceColumn,
    ...sets.map(([c]) => c),
    '',
    ...wheres.map(([c]) => c),
  ].join('\0');
  let shape = shapes.get(key);
  if (!shape) {
    shape = buildShape(dialect, spec, fenceColumn, sets, wheres);
    if (shapes.size >= MAX_SHAPES) shapes.clear();
    shapes.set(key, shape);
  }
  const whereValues = wheres.map(([, v]) => v);
  const values = [...sets.map(([, v]) => v), token, ...whereValues];
  // PostgreSQL reuses the token's parameter; MySQL's `?` are positional, so it is bound twice.
  if (dialect === 'mysql') values.push(token);
  return { sql: shape.sql, values, select: { sql: shape.select, values: whereValues } };
}

function buildShape(
  dialect: SqlDialect,
  spec: FencedUpdateSpec,
  fenceColumn: string,
  sets: [string, unknown][],
  wheres: [string, unknown][],
): { sql: string; select: string } {
  const fence = quoteName(dialect, fenceColumn, 'fenceColumn');
  if (sets.some(([c]) => c === fenceColumn))
    throw new InvalidLockOptionsError('set', spec.set, 'columns other than the fence column');
  let n = 0;
  const param = () => (dialect === 'postgres' ? `$${++n}` : '?');
  const cast = (p: string) => (dialect === 'postgres' ? `${p}::bigint` : `CAST(${p} AS SIGNED)`);
  const col = (c: string, option: string) => quoteName(dialect, c, option);
  const assign = sets.map(([c]) => `${col(c, 'set')} = ${param()}`);
  const tokenParam = param();
  assign.push(`${fence} = ${cast(tokenParam)}`);
  const match = wheres.map(([c]) => `${col(c, 'where')} = ${param()}`).join(' AND ');
  const current = cast(dialect === 'postgres' ? tokenParam : param());
  const table = quoteName(dialect, spec.table, 'table');
  const sql =
    `UPDATE ${table} SET ${assign.join(', ')} WHERE ${match} ` +
    `AND (${fence} IS NULL OR ${fence} <= ${current})`;
  n = 0;
  const highest = dialect === 'postgres' ? `MAX(${fence})::text` : `CAST(MAX(${fence}) AS CHAR)`;
  const selectWhere = wheres.map(([c]) => `${col(c, 'where')} = ${param()}`).join(' AND ');
  return { sql, select: `SELECT ${highest} AS token FROM ${table} WHERE ${selectWhere}` };
}

function entries(record: Record<string, unknown>, option: string): [string, unknown][] {
  const list = record && typeof record === 'object' ? Object.entries(record) : [];
  if (list.length === 0) throw new InvalidLockOptionsError(option, record, 'at least one column');
  return list;
}
