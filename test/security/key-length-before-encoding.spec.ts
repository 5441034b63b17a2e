import * as keyEncoding from '../../lib/backend-kit/key-encoding';
import { MAX_KEY_LENGTH } from '../../lib/backend-kit/limits';
import { compileLockKey } from '../../lib/core/keys/lock-key';
import { LockKeyResolutionError } from '../../lib/errors/lock-key-resolution.error';

/**
 * Issue 14.2: the key's length was checked after encoding, so a 10 MB body of '.' was encoded
 * (30 MB of '%2E') before its 400: seconds of event loop per request. Counted, not timed: the
 * encoder must never see more than the limit, and must stop once its output passes it.
 */
describe('key length is bounded before encoding (issue 14.2)', () => {
  afterEach(() => jest.restoreAllMocks());

  it('a 10 MB value is rejected with LockKeyResolutionError without being encoded', () => {
    const encode = jest.spyOn(keyEncoding, 'encodeKeyPart');
    const k = compileLockKey('order:<id>', ['id'], 'T.m()');
    const huge = '.'.repeat(10 * 1024 * 1024);
    expect(() => k.resolve([huge])).toThrow(LockKeyResolutionError);
    expect(() => k.resolve([huge])).toThrow(new RegExp(`at most ${MAX_KEY_LENGTH}`));
    const longest = Math.max(0, ...encode.mock.calls.map(([v]) => String(v).length));
    expect(longest).toBeLessThanOrEqual(MAX_KEY_LENGTH + 1);
  });

  it('a value that fits raw but not encoded stops encoding once past the limit', () => {
    const from = jest.spyOn(Buffer, 'from');
    // 500 characters of 'é' would encode to 3000: each costs 6 output characters and one Buffer.from.
    expect(() => compileLockKey('o:<id>', ['id'], 'T.m()').resolve(['é'.repeat(500)])).toThrow(
      LockKeyResolutionError,
    );
    expect(from.mock.calls.length).toBeLessThanOrEqual(Math.ceil(MAX_KEY_LENGTH / 6) + 1);
  });

  it('encodeKeyPart(value, maxLength) stops at the limit (function keys can use it too)', () => {
    const from = jest.spyOn(Buffer, 'from');
    expect(() => keyEncoding.encodeKeyPart('é'.repeat(100_000), 60)).toThrow(/at most 60/);
    expect(from.mock.calls.length).toBeLessThanOrEqual(11);
    expect(keyEncoding.encodeKeyPart('é', 6)).toBe('%C3%A9');
  });

  it('encodeKeyPart has a length bound by default: a 100 KB value fails before any scan', () => {
    // The README's example calls it without one; no key can hold a part longer than MAX_KEY_LENGTH.
    const from = jest.spyOn(Buffer, 'from');
    expect(() => keyEncoding.encodeKeyPart('é'.repeat(100_000))).toThrow(
      new RegExp(`at most ${MAX_KEY_LENGTH}`),
    );
    expect(() => keyEncoding.encodeKeyPart('x'.repeat(MAX_KEY_LENGTH + 1))).toThrow();
    expect(from).not.toHaveBeenCalled();
    expect(keyEncoding.encodeKeyPart('x'.repeat(MAX_KEY_LENGTH))).toHaveLength(MAX_KEY_LENGTH);
  });

  it('several values share one budget: the second is bounded by what the first left', () => {
    const encode = jest.spyOn(keyEncoding, 'encodeKeyPart');
    const k = compileLockKey('a:<x>:<y>', ['x', 'y'], 'T.m()');
    expect(() => k.resolve(['a'.repeat(400), 'b'.repeat(400)])).toThrow(LockKeyResolutionError);
    for (const [v] of encode.mock.calls)
      expect(String(v).length).toBeLessThanOrEqual(MAX_KEY_LENGTH + 1);
    expect(k.resolve(['a'.repeat(200), 'b'.repeat(200)])).toHaveLength(403);
  });
});
