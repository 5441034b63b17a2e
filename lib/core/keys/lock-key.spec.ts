import { encodeKeyPart } from '../../backend-kit/key-encoding';
import { compileLockKey, parseParameterNames } from './lock-key';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockKeyResolutionError } from '../../errors/lock-key-resolution.error';

describe('key templates', () => {
  it('reads parameter names, including defaults, rest and destructured parameters', () => {
    class C {
      async m(id: string, amount = 3, { a }: { a: number } = { a: 1 }, ...rest: unknown[]) {
        return [id, amount, a, rest];
      }
    }
    expect(parseParameterNames(C.prototype.m)).toEqual(['id', 'amount', null, 'rest']);
    expect(
      parseParameterNames(function f(/* a, */ b: string /* c */) {
        return b;
      }),
    ).toEqual(['b']);
    expect(parseParameterNames(() => 1)).toEqual([]);
  });

  it('resolves <name>, <name.path>, <0> and <1.id>', () => {
    const k = compileLockKey(
      'o:<id>:<dto.customer.id>:<0>:<1.customer.id>',
      ['id', 'dto'],
      'T.m()',
    );
    expect(k.resolve(['42', { customer: { id: 7 } }])).toBe('o:42:7:42:7');
  });

  it('encodes every character outside [A-Za-z0-9_-] injectively', () => {
    const values = [
      ':',
      '/',
      '{',
      '}',
      '*',
      '..',
      '\n',
      '%',
      '%25',
      'é',
      '😀',
      'a b',
      '.',
      '-',
      '_',
      'A',
    ];
    const encoded = values.map((v) => encodeKeyPart(v));
    expect(new Set(encoded).size).toBe(values.length);
    for (const e of encoded) expect(e).toMatch(/^[A-Za-z0-9_%-]+$/);
    expect(encodeKeyPart('../x')).toBe('%2E%2E%2Fx');
    expect(encodeKeyPart('{a}')).toBe('%7Ba%7D');
  });

  it('a value can never produce another lock’s key', () => {
    const k = compileLockKey('order:<id>:items', ['id'], 'T.m()');
    const victims = new Set(['order:1:items', 'order:2:items']);
    for (const evil of ['1:items', '1', '1:items\norder:2', '2:items', '1/../2']) {
      const resolved = k.resolve([evil]);
      if (evil === '1') expect(resolved).toBe('order:1:items');
      else expect(victims.has(resolved)).toBe(false);
    }
  });

  it('fails the call for a missing, empty, object, array, boolean, non-finite or lone-surrogate value', () => {
    const k = compileLockKey('o:<dto.id>', ['dto'], 'T.m()');
    for (const dto of [
      undefined,
      null,
      {},
      { id: '' },
      { id: {} },
      { id: [1] },
      { id: true },
      { id: Number.NaN },
      { id: Infinity },
      { id: '\uD800' },
    ]) {
      expect(() => k.resolve([dto])).toThrow(LockKeyResolutionError);
    }
    expect(k.resolve([{ id: 10n }])).toBe('o:10');
    expect(k.resolve([{ id: '\uD83D\uDE00' }])).toBe('o:%F0%9F%98%80'); // a proper pair is fine
    expect(() => encodeKeyPart('\uDBFF')).toThrow(InvalidLockOptionsError);
  });

  it('fails at definition for unknown names, positions past the parameters and malformed templates', () => {
    expect(() => compileLockKey('o:<nope>', ['id'], 'T.m()')).toThrow(
      /<nope> must name a parameter of T\.m\(\), whose parameters are: id \(0\)/,
    );
    expect(() => compileLockKey('o:<1>', ['id'], 'T.m()')).toThrow(InvalidLockOptionsError);
    expect(() => compileLockKey('o:<id', ['id'], 'T.m()')).toThrow(/balanced/);
    expect(() => compileLockKey('o:<id.>', ['id'], 'T.m()')).toThrow(InvalidLockOptionsError);
    expect(() => compileLockKey('', ['id'], 'T.m()')).toThrow(InvalidLockOptionsError);
  });

  it('refuses a template whose literal text holds a control character or a lone surrogate, at definition', () => {
    for (const template of ['order:\n<id>', '<id>\u0000', 'a\ud800:<id>']) {
      expect(() => compileLockKey(template, ['id'], 'C.m()')).toThrow(InvalidLockOptionsError);
      expect(() => compileLockKey(template, ['id'], 'C.m()')).toThrow(/C\.m\(\)/);
    }
    // Values are encoded: what a resolved key holds beyond the literals is [A-Za-z0-9_%-] only.
    expect(compileLockKey('order:<id>', ['id'], 'C.m()').resolve(['a\nb'])).toBe('order:a%0Ab');
  });

  it('function keys: a throwing or non-string result fails the call', () => {
    const k = compileLockKey((x: { id: string }) => x.id, ['x'], 'T.m()');
    expect(k.resolve([{ id: 'a' }])).toBe('a');
    expect(() => k.resolve([undefined])).toThrow(LockKeyResolutionError);
    expect(() => compileLockKey(() => '', [], 'T.m()').resolve([])).toThrow(LockKeyResolutionError);
  });
});
