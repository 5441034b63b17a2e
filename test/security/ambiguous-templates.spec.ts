import fc from 'fast-check';
import { encodeKeyPart } from '../../lib/backend-kit/key-encoding';
import { compileLockKey, type CompiledLockKey } from '../../lib/core/keys/lock-key';
import { InvalidLockOptionsError } from '../../lib/errors/invalid-lock-options.error';

/**
 * Issue 14.1: values were encoded injectively but templates were not: `inv:<tenant>_<id>` gave
 * `inv:acme_1_2` for ('acme_1', '2') and for ('acme', '1_2'): one tenant's request locked another's
 * invoice. A template must be injective in its tuple of values, or fail at start-up.
 */
const PARAMS = ['a', 'b', 'c'];

/** Every tuple of values whose encodings, put between the template's literals, spell `key`. */
function parses(key: string, lits: readonly string[]): string[][] {
  if (!key.startsWith(lits[0])) return [];
  const out: string[][] = [];
  const walk = (at: number, i: number, values: string[]) => {
    if (i === lits.length - 1) {
      if (at === key.length) out.push(values);
      return;
    }
    for (let end = at + 1; end <= key.length; end++) {
      const value = decode(key.slice(at, end));
      if (value !== undefined && key.startsWith(lits[i + 1], end))
        walk(end + lits[i + 1].length, i + 1, [...values, value]);
    }
  };
  walk(lits[0].length, 0, []);
  return out;
}

/** The value whose encoding is exactly `part`, if any (canonical: 'a' is never written %61). */
function decode(part: string): string | undefined {
  if (!/^(?:[A-Za-z0-9_-]|%[0-9A-F]{2})+$/.test(part)) return undefined;
  try {
    const value = decodeURIComponent(part);
    return encodeKeyPart(value) === part ? value : undefined;
  } catch {
    return undefined;
  }
}

function tryCompile(template: string): CompiledLockKey | undefined {
  try {
    return compileLockKey(template, PARAMS, 'T.m()');
  } catch (error) {
    if (error instanceof InvalidLockOptionsError) return undefined;
    throw error;
  }
}

describe('ambiguous key templates (issue 14.1)', () => {
  it.each([
    ['inv:<a>_<b>', ['acme_1', '2'], ['acme', '1_2']],
    ['order-<a>-<b>', ['x-1', '2'], ['x', '1-2']],
    ['<a><b>', ['ab', 'c'], ['a', 'bc']],
    ['<a>%<b>', ['x', '25%1'], ['x%', '251']],
    ['k:<a>x<b>', ['1x', '2'], ['1', 'x2']],
  ])('rejects %s at start-up (two tuples gave one key)', (template, one, two) => {
    const byHand = (values: string[]) =>
      template.replace(/<([abc])>/g, (_m, p: string) => encodeKeyPart(values[PARAMS.indexOf(p)]));
    expect(byHand(one)).toBe(byHand(two));
    expect(() => compileLockKey(template, PARAMS, 'T.m()')).toThrow(InvalidLockOptionsError);
    expect(() => compileLockKey(template, PARAMS, 'T.m()')).toThrow(
      /separator such as ':' or '\/'/,
    );
  });

  it('accepts templates whose placeholders are separated by a character values never contain unencoded', () => {
    for (const t of [
      'inv:<a>:<b>',
      'inv/<a>/<b>',
      '<a>.<b>',
      '<a>x:<b>',
      '<a>:x<b>',
      'k:<a>',
      '<a>',
      'p<a>s',
      '<a>:<b>:<c>',
    ]) {
      expect(tryCompile(t)).toBeDefined();
    }
    expect(compileLockKey('inv:<a>:<b>', PARAMS, 'T.m()').resolve(['acme:1', '2'])).toBe(
      'inv:acme%3A1:2',
    );
  });

  it('property: for every accepted template, equal resolved keys imply equal value tuples', () => {
    // Literal characters include the encoded alphabet ([A-Za-z0-9_-], '%') and safe separators.
    const literal = fc.string({
      unit: fc.constantFrom('a', 'x', '1', '2', '5', '_', '-', '%', ':', '/', '.'),
      maxLength: 3,
    });
    const template = fc
      .tuple(fc.integer({ min: 1, max: 3 }), fc.array(literal, { minLength: 4, maxLength: 4 }))
      .map(([n, lits]) => ({
        lits: lits.slice(0, n + 1),
        t: lits.slice(1, n + 1).reduce((t, l, i) => `${t}<${PARAMS[i]}>${l}`, lits[0]),
      }));
    const value = fc.string({
      unit: fc.constantFrom('a', 'x', '1', '2', '5', '_', '-', '%', ':', '/', '.', 'é'),
      minLength: 1,
      maxLength: 4,
    });
    let accepted = 0;
    fc.assert(
      fc.property(
        template.chain(({ t, lits }) =>
          fc.tuple(
            fc.constant(t),
            fc.constant(lits),
            fc.array(fc.array(value, { minLength: lits.length - 1, maxLength: lits.length - 1 }), {
              minLength: 1,
              maxLength: 20,
            }),
          ),
        ),
        ([t, lits, tuples]) => {
          const compiled = tryCompile(t);
          if (!compiled) return true;
          accepted++;
          const seen = new Map<string, string>();
          for (const tuple of tuples) {
            const key = compiled.resolve(tuple);
            // No other tuple can give this key: the key parses back into exactly one tuple of values.
            expect(parses(key, lits)).toEqual([tuple]);
            const before = seen.get(key);
            if (before !== undefined) expect(before).toBe(JSON.stringify(tuple));
            seen.set(key, JSON.stringify(tuple));
          }
          return true;
        },
      ),
      { numRuns: 1_500, seed: 141 },
    );
    expect(accepted).toBeGreaterThan(500);
  });

  it('property: templates with a safe separator between every pair of placeholders are accepted', () => {
    const unsafe = fc.string({ unit: fc.constantFrom('a', '1', '_', '-', '%'), maxLength: 2 });
    const sep = fc.constantFrom(':', '/', '.', '#', '@');
    fc.assert(
      fc.property(fc.tuple(unsafe, sep, unsafe, unsafe, sep, unsafe), ([p, s1, u1, u2, s2, u3]) => {
        expect(tryCompile(`${p}<a>${u1}${s1}${u2}<b>${s2}${u3}<c>`)).toBeDefined();
      }),
      { numRuns: 500, seed: 142 },
    );
  });
});
