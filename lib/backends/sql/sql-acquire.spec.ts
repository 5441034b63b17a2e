import { acquireInTransaction, type SqlRow, type SqlWaiterLine } from './sql-acquire';
import type { SqlConnection, SqlDialect, SqlGrant } from './sql.dialect';

/** A connection that answers the holders statement with `rows` and logs every statement. */
function fake(rows: object[]) {
  const log: string[] = [];
  const grants: SqlGrant[] = [];
  const answer = (text: string) => {
    log.push(text);
    return Promise.resolve({ rows: text === 'holders' ? rows : [], affected: 0 });
  };
  const conn: SqlConnection = { run: answer, query: answer, release: () => {}, destroy: () => {} };
  const dialect = {
    statements: { readCommitted: 'rc', begin: 'begin', mutex: 'mutex', holders: 'holders' },
    mutexValues: (key: unknown) => [key],
    grant: (_: SqlConnection, grant: SqlGrant) => {
      grants.push(grant);
      return Promise.resolve({ fencingToken: 7n, sentAt: 1 });
    },
  } as unknown as SqlDialect<unknown>;
  return { conn, dialect, log, grants };
}

const attempt = { key: 'k', owner: 'me', mode: 'exclusive' as const, ttl: 1_000 };
const request = { ...attempt, permits: undefined, waits: true };

describe('the SQL acquire transaction (over any dialect)', () => {
  it('grants a free key: mutex, read, the dialect grant, COMMIT', async () => {
    const f = fake([]);
    const outcome = await acquireInTransaction(f.conn, f.dialect, request, 'h', undefined);
    expect(outcome).toEqual({
      result: { acquired: true, fencingToken: 7n, sentAt: 1 },
      queued: false,
    });
    expect(f.log).toEqual(['rc', 'begin', 'mutex', 'holders', 'COMMIT']);
    expect(f.grants[0]).toMatchObject({ stored: 'exclusive', holder: 'h', purge: false });
  });

  it('rolls back behind a live holder, and purges an expired one before granting', async () => {
    const busy = fake([{ owner: 'x', mode: 'shared', left_us: '2500' }]);
    const outcome = await acquireInTransaction(busy.conn, busy.dialect, request, 'h', undefined);
    expect(outcome).toEqual({ result: { acquired: false, retryAfter: 3 }, queued: false });
    expect(busy.log.at(-1)).toBe('ROLLBACK');
    const expired = fake([{ owner: 'x', mode: 'exclusive', left_us: -5 }]);
    await acquireInTransaction(expired.conn, expired.dialect, request, undefined, undefined);
    expect(expired.grants[0]).toMatchObject({ purge: true, holder: undefined });
  });

  it('with a waiter line: an older waiter keeps a free key; the line keeps our place', async () => {
    const waiter = { owner: 'w', mode: 'queued', left_us: 4_000 };
    const line: SqlWaiterLine = {
      isWaiter: (row: SqlRow) => (row.mode as string) === 'queued',
      place: () => ({ ahead: 1, retryAfter: 4, expired: 0, mine: undefined }),
      keep: () => Promise.resolve(true),
    };
    const f = fake([waiter]);
    const outcome = await acquireInTransaction(f.conn, f.dialect, request, 'h', line);
    expect(outcome).toEqual({ result: { acquired: false, retryAfter: 4 }, ahead: 1, queued: true });
    // A request the line does not keep (it does not wait) is rolled back.
    const g = fake([waiter]);
    const notKept = { ...line, keep: () => Promise.resolve(false) };
    await acquireInTransaction(g.conn, g.dialect, { ...request, waits: false }, 'h', notKept);
    expect(g.log.at(-1)).toBe('ROLLBACK');
  });
});
