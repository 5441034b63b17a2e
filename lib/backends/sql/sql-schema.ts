/**
 * Statement helpers both SQL backends share: creating the schema once per backend (retried on the
 * next call after a failure, e.g. while the server was down) and the DDL text for DBAs.
 */
export class SchemaOnce {
  private done: Promise<void> | undefined;

  constructor(
    private readonly enabled: boolean,
    private readonly create: () => Promise<void>,
  ) {}

  /** Resolves once the schema exists (at once when creation is disabled). */
  ensure(): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    this.done ??= this.create().catch((error: unknown) => {
      this.done = undefined; // retry on the next call
      throw error;
    });
    return this.done;
  }
}

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
