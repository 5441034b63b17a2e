import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import {
  DEFAULT_FENCE_COLUMN,
  grantColumnOf,
  quoteName,
  type SqlDialect,
} from './sql-fenced.schema';

/**
 * The SQL both fenced stores send, per dialect. Values are always bound parameters; tokens are
 * bound as decimal strings and cast to BIGINT in the statement, so a token past 2^53 is compared
 * exactly (MySQL would compare a bare string with a number as a double). A token is current when
 * it is higher than the recorded one, or equal to it and from the grant recorded with it.
 */

/**
 * Records `token` and its grant for a resource unless it is not current (one statement; its row
 * lock is held until the caller's transaction ends, which orders concurrent holders).
 * PostgreSQL: the upsert's WHERE skips the update, so RETURNING yields no row.
 * MySQL: a refused token leaves the row as it is and puts highest + 1 into the OK packet's insert
 * id (LAST_INSERT_ID(expr), never 0); an accepted one leaves it 0. grant_id is assigned first, so
 * the token's test sees the grant as it is after an accepted write and as it was otherwise.
 */
export function advanceStatement(dialect: SqlDialect, table: string): string {
  const t = quoteName(dialect, table, 'table');
  if (dialect === 'postgres')
    return (
      `INSERT INTO ${t} AS f (resource, token, grant_id) VALUES ($1, $2::bigint, $3) ` +
      'ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token, grant_id = EXCLUDED.grant_id ' +
      'WHERE f.token < EXCLUDED.token OR (f.token = EXCLUDED.token AND f.grant_id = EXCLUDED.grant_id) ' +
      'RETURNING token'
    );
  const current =
    'token < VALUES(token) OR (token = VALUES(token) AND grant_id = VALUES(grant_id))';
  return (
    `INSERT INTO ${t} (resource, token, grant_id) VALUES (?, CAST(? AS SIGNED), ?) ` +
    `ON DUPLICATE KEY UPDATE grant_id = IF(${current}, VALUES(grant_id), grant_id), ` +
    `token = IF(${current}, VALUES(token), LAST_INSERT_ID(CAST(token AS UNSIGNED) + 1) - 1)`
  );
}

export function highestStatement(dialect: SqlDialect, table: string): string {
  const t = quoteName(dialect, table, 'table');
  return dialect === 'postgres'
    ? `SELECT token::text AS token FROM ${t} WHERE resource = $1`
    : `SELECT CAST(token AS CHAR) AS token FROM ${t} WHERE resource = ?`;
}

export function resetStatement(dialect: SqlDialect, table: string): string {
  const t = quoteName(dialect, table, 'table');
  return `DELETE FROM ${t} WHERE resource = ${dialect === 'postgres' ? '$1' : '?'}`;
}

/** What the column form updates: `set` columns where every `where` column equals its value. */
export interface FencedUpdateSpec {
  /** Your table (or schema.table). */
  table: string;
  /** Columns to set, with their values (bound parameters). */
  set: Record<string, unknown>;
  /** The row(s): column = value for each entry, ANDed. At least one; no undefined or null. */
  where: Record<string, unknown>;
  /** The fence column (BIGINT NULL); its grant column is `<fenceColumn>_grant`. Default 'fence'. */
  fenceColumn?: string;
}

/**
 * Statement texts by shape (dialect, table, fence, set and where columns): built and checked once.
 */
const shapes = new Map<string, { sql: string; select: string }>();
const MAX_SHAPES = 512;

/**
 * One UPDATE that writes the matched rows only when none of them is newer than `token` (or holds
 * `token` from another grant), and sets their fence to it: a statement over several rows is
 * refused as a whole, never applied to the older rows alone. Plus the SELECT that reports why a
 * statement that changed nothing did so.
 */
export function fencedUpdateStatement(
  dialect: SqlDialect,
  spec: FencedUpdateSpec,
  token: string,
  grant: string,
): { sql: string; values: unknown[]; select: { sql: string; values: unknown[] } } {
  const sets = entries(spec.set, 'set', false);
  const wheres = entries(spec.where, 'where', true);
  const fenceColumn = spec.fenceColumn ?? DEFAULT_FENCE_COLUMN;
  const key = [dialect, spec.table, fenceColumn, ...sets.map(([c]) => c), '']
    .concat(wheres.map(([c]) => c))
    .join('\0');
  let shape = shapes.get(key);
  if (!shape) {
    shape = buildShape(dialect, spec.table, fenceColumn, sets, wheres);
    if (shapes.size >= MAX_SHAPES) shapes.clear();
    shapes.set(key, shape);
  }
  const w = wheres.map(([, v]) => v);
  const s = sets.map(([, v]) => v);
  const values =
    dialect === 'postgres'
      ? [...s, token, grant, ...w]
      : [...w, token, token, grant, ...s, token, grant, ...w, token, token, grant];
  return { sql: shape.sql, values, select: { sql: shape.select, values: [token, grant, ...w] } };
}

function buildShape(
  dialect: SqlDialect,
  tableName: string,
  fenceColumn: string,
  sets: [string, unknown][],
  wheres: [string, unknown][],
): { sql: string; select: string } {
  const q = (name: string, option: string) => quoteName(dialect, name, option);
  const table = q(tableName, 'table');
  const f = q(fenceColumn, 'fenceColumn');
  const g = q(grantColumnOf(fenceColumn), 'fenceColumn');
  if (sets.some(([c]) => c === fenceColumn || c === grantColumnOf(fenceColumn)))
    throw new InvalidLockOptionsError(
      'set',
      sets.map(([c]) => c).join(', '),
      'columns other than the fence columns',
    );
  for (const [c] of wheres) q(c, 'where');
  if (dialect === 'postgres') {
    let n = 0;
    const assign = sets.map(([c]) => `${q(c, 'set')} = $${++n}`);
    const tok = `$${++n}::bigint`;
    const gr = `$${++n}::text`;
    const whereAt = n;
    const match = (alias: string) =>
      wheres.map(([c], i) => `${alias}${q(c, 'where')} = $${whereAt + i + 1}`).join(' AND ');
    const sql =
      `UPDATE ${table} SET ${[...assign, `${f} = ${tok}`, `${g} = ${gr}`].join(', ')} ` +
      `WHERE ${match('')} AND (${f} IS NULL OR ${f} < ${tok} OR ` +
      `(${f} = ${tok} AND COALESCE(${g}, '') = ${gr})) AND NOT EXISTS (SELECT 1 FROM ${table} ` +
      `AS fenced_check WHERE ${match('fenced_check.')} AND (fenced_check.${f} > ${tok} OR ` +
      `(fenced_check.${f} = ${tok} AND COALESCE(fenced_check.${g}, '') <> ${gr})))`;
    const select =
      `SELECT MAX(${f})::text AS token, SUM(CASE WHEN ${f} = $1::bigint AND ` +
      `COALESCE(${g}, '') <> $2::text THEN 1 ELSE 0 END) AS taken FROM ${table} WHERE ` +
      wheres.map(([c], i) => `${q(c, 'where')} = $${i + 3}`).join(' AND ');
    return { sql, select };
  }
  // MySQL cannot read the updated table in a subquery of its UPDATE, but it may join it to itself:
  // a matched row of the same `where` with a newer token (or this token from another grant) joins
  // every row, and only rows that joined none are written.
  const tok = 'CAST(? AS SIGNED)';
  const match = (alias: string) =>
    wheres.map(([c]) => `${alias}${q(c, 'where')} = ?`).join(' AND ');
  const [firstWhere] = wheres[0];
  const sql =
    `UPDATE ${table} AS fenced_row LEFT JOIN ${table} AS fenced_check ON ` +
    `${match('fenced_check.')} AND (fenced_check.${f} > ${tok} OR (fenced_check.${f} = ${tok} ` +
    `AND COALESCE(fenced_check.${g}, '') <> ?)) SET ` +
    [
      ...sets.map(([c]) => `fenced_row.${q(c, 'set')} = ?`),
      `fenced_row.${f} = ${tok}`,
      `fenced_row.${g} = ?`,
    ].join(', ') +
    ` WHERE ${match('fenced_row.')} AND (fenced_row.${f} IS NULL OR fenced_row.${f} < ${tok} OR ` +
    `(fenced_row.${f} = ${tok} AND COALESCE(fenced_row.${g}, '') = ?)) ` +
    `AND fenced_check.${q(firstWhere, 'where')} IS NULL`;
  const select =
    `SELECT CAST(MAX(${f}) AS CHAR) AS token, SUM(CASE WHEN ${f} = ${tok} AND ` +
    `COALESCE(${g}, '') <> ? THEN 1 ELSE 0 END) AS taken FROM ${table} WHERE ${match('')}`;
  return { sql, select };
}

function entries(
  record: Record<string, unknown>,
  option: string,
  defined: boolean,
): [string, unknown][] {
  const list = record && typeof record === 'object' ? Object.entries(record) : [];
  if (list.length === 0) throw new InvalidLockOptionsError(option, record, 'at least one column');
  for (const [column, value] of list)
    if (defined && (value === undefined || value === null))
      throw new InvalidLockOptionsError(
        `${option}.${column}`,
        value,
        'a value (column = undefined or NULL matches no row: the write would silently do nothing)',
      );
  return list;
}
