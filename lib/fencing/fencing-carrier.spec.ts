import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { fencingHeaders, formatFencing, parseFencing, withFencing } from './fencing-carrier';
import { fencedValue, toFencingToken } from './fencing-token';
import { MemoryFenceStore } from './memory-fence.store';

describe('the fencing carrier (key + token on the wire)', () => {
  it('round-trips any key, tokens past 2^53 included', () => {
    for (const key of ['order:1', 'a b;key=c', 'ünï/cødé%', '{tag}:x']) {
      const token = 2n ** 63n - 1n;
      expect(parseFencing(formatFencing({ key, token }))).toEqual({ key, token, grant: '' });
    }
    expect(fencingHeaders({ key: 'k', fencingToken: 7n })).toEqual({
      'x-fencing-token': '7; key=k',
    });
    expect(withFencing({ a: 1 }, { key: 'k', token: '8' })).toEqual({ a: 1, fencing: '8; key=k' });
    expect(parseFencing(['9; key=k'])).toEqual({ key: 'k', token: 9n, grant: '' }); // gRPC Metadata.get
    expect(parseFencing(Buffer.from('9; key=k; grant=g1'))).toEqual({
      key: 'k',
      token: 9n,
      grant: 'g1',
    }); // Kafka-style
  });

  it('refuses what is not a grant', () => {
    for (const bad of [
      undefined,
      '',
      '7',
      'x; key=k',
      '-1; key=k',
      '07; key=k',
      '7; key=',
      '7; key=%E0%A4%A',
      '7; key=k; grant=',
      '7; key=k; grant=a b',
    ]) {
      expect(parseFencing(bad)).toBeUndefined();
    }
  });

  it('toFencingToken accepts bigint, safe integers, decimal strings and handles; nothing else', () => {
    expect([
      toFencingToken(3n),
      toFencingToken(3),
      toFencingToken('3'),
      toFencingToken({ fencingToken: 3n }),
    ]).toEqual([3n, 3n, 3n, 3n]);
    for (const bad of [-1n, -1, 1.5, 2 ** 53, '1e3', '', ' 1', null])
      expect(() => toFencingToken(bad as never)).toThrow(InvalidLockOptionsError);
  });

  it('MemoryFenceStore: equal tokens pass, lower ones are refused, per resource', async () => {
    const store = new MemoryFenceStore();
    expect(fencedValue(store.write('r', 5n, () => 'a'))).toBe('a');
    expect(fencedValue(store.write('r', 5n, () => 'b'))).toBe('b');
    expect(() => fencedValue(store.write('r', 4n, () => 'c'))).toThrow(/older than 5/);
    expect((await store.advance('other', 1n)).accepted).toBe(true);
  });
});
