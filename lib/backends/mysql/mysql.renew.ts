import type { BackendLock } from '../../interfaces/lock-backend.interface';
import type { SqlConnection } from '../sql/sql.dialect';
import { PAD_ROW, RENEW_SHAPES, renewShape, type MySqlStatements } from './mysql.schema';

/**
 * Batched renewal: every lock of a watchdog tick in ONE statement per chunk of up to 128, sent in
 * a fixed shape (padded) so the server prepares a bounded set of statements.
 * Returns one answer per lock, in the order given: still ours and live, renewed.
 */
export async function renewLocks(
  conn: SqlConnection,
  sql: MySqlStatements,
  locks: readonly BackendLock[],
): Promise<boolean[]> {
  // Sorted in primary-key order, the order an acquire locks a key's rows in: no lock-order
  // deadlocks.
  const sorted = locks
    .map((lock, at) => ({ lock, at, key: Buffer.from(lock.key, 'utf8') }))
    .sort((a, b) => Buffer.compare(a.key, b.key) || (a.lock.owner < b.lock.owner ? -1 : 1));
  const largest = RENEW_SHAPES[RENEW_SHAPES.length - 1];
  const results: boolean[] = [];
  for (let from = 0; from < sorted.length; from += largest) {
    results.push(...(await renewChunk(conn, sql, sorted.slice(from, from + largest))));
  }
  const answers = new Array<boolean>(locks.length);
  sorted.forEach((l, i) => (answers[l.at] = results[i]));
  return answers;
}

interface SortedLock {
  readonly lock: BackendLock;
  readonly at: number;
  readonly key: Buffer;
}

/**
 * Up to 128 sorted locks in ONE statement of a fixed shape (padded), plus one query if some failed.
 */
async function renewChunk(
  conn: SqlConnection,
  sql: MySqlStatements,
  chunk: readonly SortedLock[],
): Promise<boolean[]> {
  const size = renewShape(chunk.length);
  const pad = size - chunk.length;
  await conn.query(sql.readCommitted);
  const rows = chunk.flatMap((l) => [l.key, l.lock.owner, l.lock.ttl * 1000]);
  for (let i = 0; i < pad; i++) rows.push(PAD_ROW.key, PAD_ROW.owner, 0);
  const { affected } = await conn.run(sql.renew(size), rows);
  // Every matched row is ours and was live. All matched (the usual case): done in one statement.
  if (affected === chunk.length) return chunk.map(() => true);
  // Some did not: MariaDB has no UPDATE ... RETURNING, so ask which rows are ours and live now.
  // A renewed row stays live for a ttl (>= 30 ms); a row that was not renewed cannot become ours.
  const pairs: (Buffer | string)[] = chunk.flatMap((l) => [l.key, l.lock.owner]);
  for (let i = 0; i < pad; i++) pairs.push(PAD_ROW.key, PAD_ROW.owner);
  const { rows: live } = await conn.run(sql.alive(size), pairs);
  const ours = new Set(
    (live as { lock_key: Buffer; owner: string }[]).map((r) => `${r.owner}:${hex(r.lock_key)}`),
  );
  return chunk.map((l) => ours.has(`${l.lock.owner}:${hex(l.key)}`));
}

function hex(key: Buffer | Uint8Array): string {
  return Buffer.from(key).toString('hex');
}
