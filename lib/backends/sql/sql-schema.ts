import type { SqlConnection, SqlDialect } from './sql.dialect';

/**
 * The column where a grant's holder data (host, pid, instance) is stored. Created with the table,
 * added to an older table by the DDL at start-up (createTable: true); a table a DBA made without
 * it keeps working, without holder identities, until it is added (docs/backends/postgres.md,
 * mysql.md: the ALTER TABLE).
 */
export const HOLDER_COLUMN = 'holder';

/** The statements as one script a DBA can run (createTable: false). */
export function ddlScript(ddl: readonly string[]): string {
  return ddl.map((s) => `${s};`).join('\n\n');
}

/** What the schema check found: whether the lock table has the holder column and takes tickets. */
export interface SchemaFound {
  readonly holder: boolean;
  readonly tickets: boolean;
}

/**
 * The tables (createTable), then whether the lock table has the holder column (added to an older
 * table where the DDL does not do it itself) and takes waiters' tickets.
 */
export async function createSchema<P>(
  conn: SqlConnection,
  dialect: SqlDialect<P>,
  createTable: boolean,
): Promise<SchemaFound> {
  const { statements: s, tableRef } = dialect;
  if (createTable) await dialect.createTables(conn);
  const found = async (text: string) => (await conn.run(text, [tableRef])).rows.length > 0;
  const tickets = !s.refusesTickets || !(await found(s.refusesTickets));
  let holder = await found(s.hasHolder);
  if (!holder && createTable && s.addHolder) {
    // Concurrent start-ups may both add it: the loser's "duplicate column" is fine.
    await conn.query(s.addHolder).catch(() => undefined);
    holder = await found(s.hasHolder);
  }
  return { holder, tickets };
}
