import { InvalidLockOptionsError } from './invalid-lock-options.error';

/**
 * A fenced store's checkSchema() found a table it relies on missing or of the wrong shape. An
 * InvalidLockOptionsError (code INVALID_LOCK_OPTIONS), whose message says which table (the store's
 * fence table, or one named in checkSchema's list), what is wrong and the DDL to run, instead of
 * naming an option the caller may never have passed.
 */
export class FenceSchemaError extends InvalidLockOptionsError {
  readonly table: string;

  constructor(options: {
    /** Where the table's name came from: "the store's fence table (option table)", ... */
    role: string;
    option: string;
    table: string;
    column: string;
    expected: string;
    /** The column's type, or undefined when the column (or the whole table) is not there. */
    found: string | undefined;
    tableExists: boolean;
    ddl: string;
  }) {
    const o = options;
    super(
      o.option,
      o.table,
      `a table with column ${o.column} of type ${o.expected}; run: ${o.ddl}`,
    );
    const what = !o.tableExists
      ? 'does not exist'
      : o.found === undefined
        ? `has no column ${o.column}`
        : `has column ${o.column} of type ${o.found}, not ${o.expected}`;
    this.message = `Fenced store schema: ${o.role} "${o.table}" ${what}; run: ${o.ddl}`;
    this.table = o.table;
  }
}
