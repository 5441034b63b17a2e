import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';

/**
 * Keys of different templates must never meet: `order-<id>` with id `5-items` spells the key
 * that `order-<id>-items` gives id `5`, and `<id>` with `user5` the one `user<id>` gives `5`; one
 * request would then hold (or wait on) another kind of resource's lock. Encoding keeps a value
 * inside its placeholder but cannot tell whose template a key came from, so templates are checked
 * against each other at start-up: two that can spell one key are refused, with a key both spell.
 *
 * A template is its literals with a value between each two; an encoded value is one or more of
 * [A-Za-z0-9_-] or %XX (key-encoding.ts), a regular language, so whether two templates share a
 * key is the emptiness of the intersection of two small automata (a breadth-first walk over pairs
 * of states; the first shared key found is the shortest). The automaton reads any %XX as a unit
 * and typed placeholders (`<id:int>`) as plain values: an overlap only those would rule out is
 * still refused, which errs on the side of never sharing a key. Templates with the same literals
 * are one family of keys (`order:<id>` on pay() and cancel() mean to share a lock) and are not
 * compared.
 */

/** One template to check: its literals (a value sits between each two), and where it is used. */
export interface TemplateUse {
  readonly template: string;
  readonly literals: readonly string[];
  readonly where: string;
}

const SAFE = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';
const HEX = '0123456789ABCDEF';
/** Every character a value may start with, or continue with once a unit ended. */
const VALUE_START = SAFE + '%';

/**
 * A state of a template's automaton: `at` counts the characters read of the template's pattern,
 * where each value is one position; `sub` is where inside a value: 0 before its first unit,
 * 1 after '%', 2 after its first hex digit, 3 after a whole unit (may end or go on).
 */
interface State {
  readonly at: number;
  readonly sub: 0 | 1 | 2 | 3;
}

type Item = string | null; // a literal character, or a value (null)

function items(literals: readonly string[]): Item[] {
  const out: Item[] = [];
  literals.forEach((l, i) => {
    if (i > 0) out.push(null);
    out.push(...l);
  });
  return out;
}

/** `s` and, after a whole unit of a value, the state past that value (the one free move). */
function closure(s: State): State[] {
  return s.sub === 3 ? [s, { at: s.at + 1, sub: 0 }] : [s];
}

/** The characters `s` can read next. */
function next(pattern: readonly Item[], s: State): string {
  if (s.sub === 1 || s.sub === 2) return HEX;
  if (s.sub === 3) return VALUE_START;
  const item = pattern[s.at];
  if (item === undefined) return '';
  return item === null ? VALUE_START : item;
}

/** The state after `s` reads `ch`, if any (free moves are added by the caller). */
function step(pattern: readonly Item[], s: State, ch: string): State | undefined {
  if (s.sub === 1) return HEX.includes(ch) ? { at: s.at, sub: 2 } : undefined;
  if (s.sub === 2) return HEX.includes(ch) ? { at: s.at, sub: 3 } : undefined;
  if (s.sub === 0 && pattern[s.at] !== null) {
    return pattern[s.at] === ch ? { at: s.at + 1, sub: 0 } : undefined;
  }
  // A value's next unit: a safe character, or '%' and two hex digits.
  if (ch === '%') return { at: s.at, sub: 1 };
  return SAFE.includes(ch) ? { at: s.at, sub: 3 } : undefined;
}

const accepts = (pattern: readonly Item[], s: State): boolean =>
  s.sub === 0 && s.at === pattern.length;

/** The shortest key both patterns spell, or undefined when they share none. */
export function sharedKey(a: readonly string[], b: readonly string[]): string | undefined {
  const pa = items(a);
  const pb = items(b);
  const seen = new Set<string>();
  const queue: { sa: State; sb: State; key: string }[] = [];
  const push = (sa: State, sb: State, key: string) => {
    for (const x of closure(sa))
      for (const y of closure(sb)) {
        const id = `${x.at},${x.sub}|${y.at},${y.sub}`;
        if (seen.has(id)) continue;
        seen.add(id);
        queue.push({ sa: x, sb: y, key });
      }
  };
  push({ at: 0, sub: 0 }, { at: 0, sub: 0 }, '');
  for (let i = 0; i < queue.length; i++) {
    const { sa, sb, key } = queue[i];
    if (accepts(pa, sa) && accepts(pb, sb)) return key;
    const fromB = next(pb, sb);
    for (const ch of new Set(next(pa, sa))) {
      if (!fromB.includes(ch)) continue;
      const x = step(pa, sa, ch);
      const y = x && step(pb, sb, ch);
      if (x && y) push(x, y, key + ch);
    }
  }
  return undefined;
}

/**
 * Throws InvalidLockOptionsError when two templates of different literals can spell one key,
 * naming both, where they are used and a key both give.
 */
export function checkTemplatesDisjoint(uses: readonly TemplateUse[]): void {
  const families = new Map<string, TemplateUse>();
  for (const u of uses) {
    const id = JSON.stringify(u.literals);
    if (!families.has(id)) families.set(id, u);
  }
  const list = [...families.values()];
  for (let i = 0; i < list.length; i++)
    for (let j = i + 1; j < list.length; j++) {
      const [a, b] = [list[i], list[j]];
      const key = sharedKey(a.literals, b.literals);
      if (key === undefined) continue;
      throw new InvalidLockOptionsError(
        'key',
        a.template,
        `templates whose keys never meet another template's: "${a.template}" (${a.where}) and ` +
          `"${b.template}" (${b.where}) can both give the key "${key}", so one request could hold ` +
          `another kind of resource's lock. Give each template a literal part the other cannot ` +
          `spell, ending in a separator values never contain unencoded (e.g. "order:<id>" and ` +
          `"order-items:<id>")`,
      );
    }
}
