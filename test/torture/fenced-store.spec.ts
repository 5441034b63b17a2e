import { FencedStore } from './fenced-store.server';
import { checkHistories } from './history.checker';
import { startTortureFence, type TortureFence } from './torture.fences';

/**
 * The torture store with the package's fence deciding (torture.fences.ts; memory's is
 * MemoryFenceStore, in-process, so these cases start no server). Shared mode is the case a
 * single-token fence needs help with: an admitted reader's token must reach the fence, or a writer
 * older than that reader writes inside the reader's section.
 */
function client(store: FencedStore) {
  const call = (op: string, token: number, attempt: string, extra: object = {}) =>
    store.serve({ op, token: String(token), attempt, ...extra });
  return {
    read: (token: number, attempt: string) => call('read', token, attempt),
    write: (token: number, attempt: string, value: number) =>
      call('write', token, attempt, { value, shadow: value }),
    rbegin: (token: number, attempt: string) => call('rbegin', token, attempt),
    rend: (token: number, attempt: string) => call('rend', token, attempt),
  };
}

const check = (store: FencedStore) =>
  checkHistories({
    histories: [],
    records: store.records,
    value: store.value,
    shadow: store.shadow,
    values: store.values(),
    healAt: 0,
    ttl: 100,
    wait: 200,
    slots: 0,
    fencing: 'strict',
  });

describe('torture fenced store on the package fence', () => {
  let fence: TortureFence;
  beforeEach(async () => (fence = await startTortureFence('memory')));
  afterEach(() => fence.close());

  it("refuses a writer older than an admitted reader from the reader's begin on", async () => {
    const store = new FencedStore(undefined, fence);
    const c = client(store);
    expect((await c.read(5, '0.1.1')).accepted).toBe(true);
    expect((await c.write(5, '0.1.1', 1)).accepted).toBe(true);
    expect((await c.rbegin(7, '1.1.1')).accepted).toBe(true);
    // Token 6 was granted before the reader's 7: its holder lost the lock; the fence says so.
    expect((await c.read(6, '2.1.1')).accepted).toBe(false);
    expect((await c.write(6, '2.1.1', 2)).accepted).toBe(false);
    expect((await c.rend(7, '1.1.1')).accepted).toBe(true);
    expect((await c.read(8, '0.1.2')).value).toBe(1);
    expect((await c.write(8, '0.1.2', 2)).accepted).toBe(true);
    const r = check(store);
    expect({ safe: r.safe, accepted: r.ops.writesAccepted, value: store.value }).toEqual({
      safe: true,
      accepted: 2,
      value: 2,
    });
    expect(store.fenceMismatches).toBe(0);
  });

  it('admits concurrent readers with different tokens, then accepts the next writer', async () => {
    const store = new FencedStore(undefined, fence);
    const c = client(store);
    expect((await c.rbegin(10, '1.1.1')).accepted).toBe(true);
    expect((await c.rbegin(11, '3.1.1')).accepted).toBe(true);
    expect((await c.rend(10, '1.1.1')).accepted).toBe(true);
    expect((await c.rend(11, '3.1.1')).accepted).toBe(true);
    expect((await c.read(12, '0.1.1')).accepted).toBe(true);
    expect((await c.write(12, '0.1.1', 1)).accepted).toBe(true);
    // The reader that came after the write is older than no writer: admitted.
    expect((await c.rbegin(13, '1.1.2')).accepted).toBe(true);
    expect((await c.rbegin(9, '5.1.1')).accepted).toBe(false);
    expect(check(store).safe).toBe(true);
    expect(store.value).toBe(1);
  });

  it('the checker still catches a stale write when the fence lets it through (a broken fence)', async () => {
    const values = new Map<string, number>();
    const broken: TortureFence = {
      name: 'accepts everything',
      read: async (key) => ({ accepted: true, value: values.get(key) ?? 0 }),
      write: async (key, _token, value) => (values.set(key, value), { accepted: true }),
      advance: async () => ({ accepted: true }),
      close: async () => undefined,
    };
    const store = new FencedStore(undefined, broken);
    const c = client(store);
    await c.read(1, '0.1.1');
    await c.read(2, '1.1.1');
    await c.write(2, '1.1.1', 1);
    await c.write(1, '0.1.1', 1);
    const r = check(store);
    expect(r.safe).toBe(false);
    expect(r.lostUpdates).toBeGreaterThan(0);
    expect(r.overlaps).toBeGreaterThan(0);
  });
});
