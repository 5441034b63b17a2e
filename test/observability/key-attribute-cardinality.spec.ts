import { keyShape } from '../../lib/operations';
import { keyAttribute } from '../../lib/observability/lock-telemetry';

/**
 * The metrics attribute `lock.key` kept request values from raw keys: keyShape left
 * 'tenant:acme:invoice:abcdef' unchanged, and 1,000 slugs gave 1,000 attribute values. Every
 * segment after the first is a '*' now, and an engine reports at most 100 distinct shapes.
 */
describe('lock.key cardinality', () => {
  it('keyShape hides every segment after the first, slugs included', () => {
    expect(keyShape('tenant:acme:invoice:abcdef')).toBe('tenant:*:*:*');
    expect(keyShape('order:42')).toBe('order:*');
    // One segment: the word may be the value itself, so it is hidden too.
    expect(keyShape('report')).toBe('*');
    expect(keyShape('report:daily')).toBe('report:*');
    expect(keyShape('acme-2024')).toBe('*');
    expect(keyShape(Array.from({ length: 20 }, () => 'a').join(':'))).toBe('a:*:*:*:*:*:*:*:…');
  });

  it('1,000 slugs give one lock.key value', () => {
    const slugs = Array.from({ length: 1_000 }, (_, i) => `tenant:${i.toString(36)}-slug:invoice`);
    expect(new Set(slugs).size).toBe(1_000);
    expect(new Set(slugs.map(keyShape))).toEqual(new Set(['tenant:*:*']));
  });

  it('1,000 raw keys without a ":" give one shape and one lock.key value', () => {
    // Letters only, one word per number (base 26: digits become q..z, beside a..p).
    const words = Array.from({ length: 1_000 }, (_, i) =>
      i.toString(26).replace(/\d/g, (d) => String.fromCharCode(113 + Number(d))),
    );
    const keys = words.map((w) => `${w}-tenant`);
    expect(new Set(keys).size).toBe(1_000);
    expect(new Set(keys.map(keyShape))).toEqual(new Set(['*']));
    const keyOf = keyAttribute('template');
    expect(new Set(keys.map((k) => keyOf(k, undefined)))).toEqual(new Set(['*']));
  });

  it('an engine reports at most 100 distinct lock.key shapes of raw keys, whatever the keys', () => {
    const keyOf = keyAttribute('template');
    const words = Array.from({ length: 1_000 }, (_, i) =>
      i.toString(26).replace(/\d/g, (d) => String.fromCharCode(97 + Number(d))),
    );
    const values = new Set(words.map((w) => keyOf(`${w}-tenant:x`, undefined)));
    expect(values.size).toBeLessThanOrEqual(101);
    expect(values.has('(other)')).toBe(true);
    // A template is the attribute as it is (templates are code, few by nature).
    expect(keyOf('order:42', 'order:<id>')).toBe('order:<id>');
  });
});
