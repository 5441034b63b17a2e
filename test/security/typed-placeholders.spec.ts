import { compileLockKey } from '../../lib/core/keys/lock-key';
import { InvalidLockOptionsError } from '../../lib/errors/invalid-lock-options.error';
import { LockKeyResolutionError } from '../../lib/errors/lock-key-resolution.error';

/**
 * Issue 14.8: `/orders/1`, `/01`, `/1.0` and `/%201` took four different locks and paid order 1
 * four times: the key was the value as received. Typed placeholders canonicalise or reject.
 */
describe('typed placeholders canonicalise (issue 14.8, "one id, many locks")', () => {
  const int = compileLockKey('order:<id:int>', ['id'], 'T.m()');
  const uuid = compileLockKey('user:<dto.id:uuid>', ['dto'], 'T.m()');

  it('<id:int> gives one key for 1 and "1", and rejects every other spelling with a 400 error', () => {
    expect(int.resolve([1])).toBe('order:1');
    expect(int.resolve(['1'])).toBe('order:1');
    expect(int.resolve(['-42'])).toBe('order:-42');
    expect(int.resolve([0])).toBe('order:0');
    expect(int.resolve([-0])).toBe('order:0');
    expect(int.resolve([12345678901234567890n])).toBe('order:12345678901234567890');
    for (const bad of [
      '01',
      '1.0',
      ' 1',
      '1 ',
      '+1',
      '1e3',
      '0x1',
      '-0',
      '',
      '١',
      1.5,
      Number.NaN,
      2 ** 53,
      true,
      {},
    ]) {
      expect(() => int.resolve([bad])).toThrow(LockKeyResolutionError);
    }
    try {
      int.resolve(['01']);
    } catch (error) {
      expect((error as LockKeyResolutionError).code).toBe('LOCK_KEY_RESOLUTION');
      expect((error as Error).message).toMatch(/<id:int>.*canonical integer/);
    }
  });

  it('<id:uuid> lower-cases and rejects anything but a canonical 8-4-4-4-12 uuid', () => {
    const upper = '0F8FAD5B-D9CB-469F-A165-70867728950E';
    expect(uuid.resolve([{ id: upper }])).toBe(`user:${upper.toLowerCase()}`);
    expect(uuid.resolve([{ id: upper.toLowerCase() }])).toBe(uuid.resolve([{ id: upper }]));
    for (const bad of [
      `{${upper}}`,
      upper.replace(/-/g, ''),
      ` ${upper}`,
      `${upper}0`,
      'not-a-uuid',
      1,
    ]) {
      expect(() => uuid.resolve([{ id: bad }])).toThrow(LockKeyResolutionError);
    }
  });

  it('an unknown type fails at start-up naming the known ones', () => {
    expect(() => compileLockKey('o:<id:float>', ['id'], 'T.m()')).toThrow(InvalidLockOptionsError);
    expect(() => compileLockKey('o:<id:float>', ['id'], 'T.m()')).toThrow(/int, uuid/);
    expect(() => compileLockKey('o:<0:int>', ['id'], 'T.m()').resolve(['7'])).not.toThrow();
  });
});
