import { encodeKeyPart } from '../../backend-kit/key-encoding';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { compileLockKey } from './lock-key';
import { checkTemplatesDisjoint, sharedKey } from './template-overlap';

/** The literals of a template, as compileLockKey records them. */
const literalsOf = (template: string) => compileLockKey(template, ['id', 'b'], 'T.m()').literals!;

const use = (template: string, where = 'T.m()') => ({
  template,
  literals: literalsOf(template),
  where,
});

describe('keys of different templates never meet', () => {
  it.each([
    ['order-<id>', 'order-<id>-items', 'order-5-items', ['5-items'], ['5']],
    ['<id>', 'user<id>', 'user5', ['user5'], ['5']],
    ['k:<id>', 'k:x<id>', 'k:x1', ['x1'], ['1']],
    ['k:<id>', 'k:<id>-v2', 'k:1-v2', ['1-v2'], ['1']],
    ['user:<id>', '<id>:user', 'user:user', ['user'], ['user']],
  ])('finds the key "%s" and "%s" both give', (one, two, _example, oneValues, twoValues) => {
    const spell = (t: string, values: string[]) => t.replace(/<id>/, encodeKeyPart(values[0]));
    // The collision is real: the values named give one key.
    expect(spell(one, oneValues)).toBe(spell(two, twoValues));
    const key = sharedKey(literalsOf(one), literalsOf(two));
    expect(key).toBeDefined();
    expect(() => checkTemplatesDisjoint([use(one, 'A.a()'), use(two, 'B.b()')])).toThrow(
      InvalidLockOptionsError,
    );
  });

  it('names both templates, both methods and a key both give', () => {
    expect(() =>
      checkTemplatesDisjoint([
        use('order-<id>', 'Orders.pay()'),
        use('order-<id>-items', 'Items.add()'),
      ]),
    ).toThrow(
      /"order-<id>" \(Orders\.pay\(\)\) and "order-<id>-items" \(Items\.add\(\)\) can both give the key "order-[^"]+-items"/,
    );
  });

  it.each([
    ['order:<id>', 'order:<id>:items'],
    ['order:<id>', 'invoice:<id>'],
    ['user:<id>', 'team:<id>'],
    ['k:<id>/<b>', 'k:<id>'],
    ['a/<id>', 'b/<id>'],
  ])('accepts "%s" beside "%s" (no key both give)', (one, two) => {
    expect(sharedKey(literalsOf(one), literalsOf(two))).toBeUndefined();
    expect(() => checkTemplatesDisjoint([use(one), use(two)])).not.toThrow();
  });

  it('accepts one template used twice, under other placeholder names or types', () => {
    expect(() =>
      checkTemplatesDisjoint([
        use('order:<id>', 'A.pay()'),
        use('order:<id>', 'A.cancel()'),
        use('order:<b>', 'B.ship()'),
        use('order:<id:int>', 'C.refund()'),
      ]),
    ).not.toThrow();
  });
});
