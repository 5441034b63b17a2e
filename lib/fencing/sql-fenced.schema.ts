import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';

/**
 * The schema both fenced SQL stores rely on, per dialect: the fence table, the fence columns of
 * the column form, and how checkSchema() reads them back from information_schema. Identifiers are
 * quoted (a name may be `schema.table`); anything but plain identifiers is refused.
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

/** The column beside a fence column that names the grant which wrote its token. */
export function grantColumnOf(fenceColumn: string): string {
  return `${fenceColumn}_grant`;
}

/**
 * Column types. MySQL's resource and grant are VARBINARY: compared byte for byte, so no collation
 * folds case, accents or trailing spaces into another resource's fence (`Invoice:7` / `invoice:7`,
 * `inv:8` / `inv:8 `, `café:9` / `cafe:9` are different resources). PostgreSQL's default
 * (deterministic) collations already compare exactly.
 */
const TYPES = {
  postgres: { resource: 'VARCHAR(255)', grant: 'VARCHAR(64)' },
  mysql: { resource: 'VARBINARY(1020)', grant: 'VARBINARY(64)' },
} as const;

/** The fence table: a row per resource, its highest accepted token and the grant that wrote it. */
export function fenceTableDdl(dialect: SqlDialect, table = DEFAULT_FENCE_TABLE): string {
  const t = quoteName(dialect, table, 'table');
  const { resource, grant } = TYPES[dialect];
  const columns =
    `resource ${resource} NOT NULL PRIMARY KEY, token BIGINT NOT NULL, ` +
    `grant_id ${grant} NOT NULL DEFAULT ''`;
  return dialect === 'postgres'
    ? `CREATE TABLE IF NOT EXISTS ${t} (${columns})`
    : `CREATE TABLE IF NOT EXISTS ${t} (${columns}) ENGINE=InnoDB`;
}

/** The column form's DDL: a nullable BIGINT fence column and its grant column on your table. */
export function fenceColumnDdl(
  dialect: SqlDialect,
  table: string,
  column = DEFAULT_FENCE_COLUMN,
): string {
  const t = quoteName(dialect, table, 'table');
  const fence = quoteName(dialect, column, 'fenceColumn');
  const grant = quoteName(dialect, grantColumnOf(column), 'fenceColumn');
  return `ALTER TABLE ${t} ADD COLUMN ${fence} BIGINT NULL, ADD COLUMN ${grant} ${TYPES[dialect].grant} NULL`;
}

/** Columns of `table` (name, data type, collation, extra) from information_schema. */
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
  const extra = dialect === 'postgres' ? "''" : 'extra';
  return {
    sql:
      'SELECT column_name AS c, LOWER(data_type) AS d, LOWER(collation_name) AS k, ' +
      `LOWER(${extra}) AS e FROM information_schema.columns WHERE ${where}`,
    values,
  };
}

/** One column as information_schema describes it. */
export interface ColumnInfo {
  type: string;
  collation: string;
  extra: string;
}

/** What a column must be, said as the error says it. */
export interface ColumnRule {
  describe: string;
  test(column: ColumnInfo): boolean;
  /** The column's definition, for an ALTER TABLE that adds only it (where that is enough). */
  add?: string;
}

const BIGINT: ColumnRule = { describe: 'BIGINT', test: (c) => c.type === 'bigint' };

/**
 * A string column compared exactly: PostgreSQL any character type; MySQL a binary string, or a
 * character type whose collation neither folds case nor pads (`*_nopad_bin`, `*_0900_bin`).
 */
function exactText(dialect: SqlDialect): ColumnRule {
  return dialect === 'postgres'
    ? { describe: 'a character type', test: (c) => /char|text/.test(c.type) }
    : {
        describe: 'VARBINARY (or a NO PAD binary collation)',
        test: (c) =>
          /binary/.test(c.type) ||
          (/char|text/.test(c.type) && /(_nopad_bin|_0900_bin)$/.test(c.collation)),
      };
}

/** The rules checkSchema() applies to the fence table's columns. */
export function fenceTableRules(dialect: SqlDialect): Record<string, ColumnRule> {
  const grant = { ...exactText(dialect), add: `${TYPES[dialect].grant} NOT NULL DEFAULT ''` };
  return { resource: exactText(dialect), token: BIGINT, grant_id: grant };
}

/** The rules for the column form's two columns. */
export function fenceColumnRules(dialect: SqlDialect, column: string): Record<string, ColumnRule> {
  const grant = { ...exactText(dialect), add: `${TYPES[dialect].grant} NULL` };
  return { [column]: BIGINT, [grantColumnOf(column)]: grant };
}

/** ALTER TABLE `table` ADD COLUMN `column` `definition`. */
export function addColumnDdl(
  dialect: SqlDialect,
  table: string,
  column: string,
  definition: string,
): string {
  const t = quoteName(dialect, table, 'table');
  return `ALTER TABLE ${t} ADD COLUMN ${quoteName(dialect, column, 'fenceColumn')} ${definition}`;
}
