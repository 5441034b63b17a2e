import { checkLockKey, encodeKeyPart, LONE_SURROGATE } from '../../backend-kit/key-encoding';
import { MAX_KEY_LENGTH } from '../../backend-kit/limits';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockKeyResolutionError } from '../../errors/lock-key-resolution.error';
import { KEY_TYPES, type KeyType } from './key-types';
import { isIdentifier } from './parameter-names';

export { isIdentifier, parseParameterNames } from './parameter-names';

/**
 * Key templates: `order:<id>`, `<dto.customer.id>`, `<0.id>`, typed `<id:int>` / `<id:uuid>`, or a
 * function of the arguments, compiled once per decorated method. Values are encoded by the backend
 * kit's encodeKeyPart, so no value can forge another key; the template itself must be unambiguous
 * (see checkUnambiguous), so no TUPLE of values can either.
 */
export type LockKeyFn = (...args: any[]) => string;
export type LockKey = string | LockKeyFn;

export interface CompiledLockKey {
  readonly template: string;
  /**
   * A template string's literal parts (a value goes between each two); undefined for a key
   * function. What template-overlap.ts checks templates against each other with.
   */
  readonly literals?: readonly string[];
  /** Resolves the key from the call's arguments; throws LockKeyResolutionError (400 over HTTP). */
  resolve(args: readonly unknown[]): string;
}

const PLACEHOLDER = /<([^<>]*)>/g;
/**
 * Every character an encoded value may contain: a literal made only of these cannot tell two values
 * apart.
 */
const VALUE_ALPHABET = /^[A-Za-z0-9_%-]*$/;
/**
 * A parameter name as a minifier leaves it: one character. Minifiers hand out every one-letter name
 * before any two-letter one, so a method's parameters are `e`, `t`, `n`; two letters (`id`, `to`,
 * `db`) are far more often a real name than a mangled one.
 */
const MINIFIED = /^[A-Za-z_$]$/;

interface Placeholder {
  readonly text: string;
  readonly index: number;
  readonly path: readonly string[];
  readonly type?: KeyType;
}

/**
 * Compiles a template against the method's parameter names (parsed from its source, or given by
 * @KeyParam). A placeholder that names no parameter, an unknown type or an ambiguous template fails
 * here, at start-up, naming the method, its parameters and the fix.
 */
export function compileLockKey(
  key: LockKey,
  paramNames: readonly (string | null)[],
  where: string,
): CompiledLockKey {
  if (typeof key === 'function') return compileKeyFunction(key, where);
  if (typeof key !== 'string' || key.length === 0) {
    throw new InvalidLockOptionsError(
      'key',
      key,
      `a non-empty template string or a function of the arguments (${where})`,
    );
  }
  const literals: string[] = [];
  const placeholders: Placeholder[] = [];
  let last = 0;
  for (const m of key.matchAll(PLACEHOLDER)) {
    literals.push(key.slice(last, m.index));
    last = (m.index ?? 0) + m[0].length;
    placeholders.push(parsePlaceholder(m[1], key, paramNames, where));
  }
  literals.push(key.slice(last));
  if (literals.some((l) => l.includes('<') || l.includes('>'))) {
    throw new InvalidLockOptionsError('key', key, `balanced <placeholders> (${where})`);
  }
  checkUnambiguous(key, literals, placeholders, where);
  checkLiterals(key, literals, where);
  const fixed = literals.reduce((n, l) => n + l.length, 0);
  return {
    template: key,
    literals,
    resolve(args) {
      // One budget for the whole key, spent value by value: nothing longer than it is ever encoded.
      let budget = MAX_KEY_LENGTH - fixed;
      let out = literals[0];
      placeholders.forEach((p, i) => {
        const part = encodeWithin(readValue(p, args, key, budget), budget, p, key);
        budget -= part.length;
        out += part + literals[i + 1];
      });
      return out;
    },
  };
}

/**
 * What checkLockKey refuses in a key, refused in the template's literals at start-up: a resolved
 * key is then literals and encoded values only, and needs no scan per call (only its length).
 */
function checkLiterals(key: string, literals: readonly string[], where: string): void {
  try {
    for (const literal of literals) if (literal) checkLockKey(literal, Infinity);
  } catch (error) {
    const allowed = error instanceof InvalidLockOptionsError ? error.allowed : String(error);
    throw new InvalidLockOptionsError('key', key, `${allowed} (${where})`);
  }
}

/**
 * A template is injective in its tuple of values only if the literal between two placeholders holds
 * a character that an encoded value never contains ([A-Za-z0-9_-] and '%' are all it can contain):
 * then the first such character after a value marks where the value ends. `inv:<tenant>_<id>` is
 * refused: ('acme_1', '2') and ('acme', '1_2') both give `inv:acme_1_2`.
 */
function checkUnambiguous(
  key: string,
  literals: readonly string[],
  placeholders: readonly Placeholder[],
  where: string,
): void {
  for (let i = 1; i < placeholders.length; i++) {
    if (!VALUE_ALPHABET.test(literals[i])) continue;
    const [a, b] = [placeholders[i - 1].text, placeholders[i].text];
    const between = literals[i] ? `only by "${literals[i]}"` : 'by nothing';
    throw new InvalidLockOptionsError(
      'key',
      key,
      `a template whose placeholders are separated by a character values cannot contain (${where}): <${a}> and <${b}> are separated ${between}, ` +
        `which an encoded value may contain too, so two different pairs of values could give one key. ` +
        `Put a separator such as ':' or '/' between them (e.g. "<${a}>:<${b}>"); encodeKeyPart encodes ':' and '/' inside values`,
    );
  }
}

function parsePlaceholder(
  text: string,
  template: string,
  paramNames: readonly (string | null)[],
  where: string,
): Placeholder {
  const colon = text.indexOf(':');
  const typeName = colon < 0 ? undefined : text.slice(colon + 1);
  const [head, ...path] = (colon < 0 ? text : text.slice(0, colon)).split('.');
  const named = paramNames.map((n, i) => `${n ?? '<destructured>'} (${i})`).join(', ') || 'none';
  if (path.some((seg) => !/^[\w$]+$/.test(seg))) {
    throw new InvalidLockOptionsError(
      'key',
      template,
      `placeholders like <name>, <name.path>, <0>, <1.id> or <id:int> (${where})`,
    );
  }
  let type: KeyType | undefined;
  if (typeName !== undefined) {
    type = Object.prototype.hasOwnProperty.call(KEY_TYPES, typeName)
      ? KEY_TYPES[typeName]
      : undefined;
    if (!type)
      throw new InvalidLockOptionsError(
        'key',
        template,
        `<${text}>: a placeholder type among ${Object.keys(KEY_TYPES).join(', ')} (${where})`,
      );
  }
  if (/^\d+$/.test(head)) {
    const index = Number(head);
    if (index >= paramNames.length) {
      throw new InvalidLockOptionsError(
        'key',
        template,
        `<${head}> must be a parameter position of ${where}, whose parameters are: ${named}`,
      );
    }
    return { text, index, path, type };
  }
  const index = paramNames.indexOf(head);
  if (!isIdentifier(head) || index < 0) {
    throw new InvalidLockOptionsError(
      'key',
      template,
      `<${head}> must name a parameter of ${where}, whose parameters are: ${named}${unknownNameHint(head, paramNames)}`,
    );
  }
  return { text, index, path, type };
}

/**
 * How to fix a placeholder that names no parameter. Only one-letter names (while the placeholder's
 * is longer) read as minified; otherwise the template and the method simply disagree (a route's
 * `@Param('id') id` under `order:<orderId>`), and the fix is to use a name the method has.
 */
function unknownNameHint(head: string, paramNames: readonly (string | null)[]): string {
  const real = paramNames.filter((n): n is string => n !== null);
  if (real.length === 0) {
    return paramNames.length > 0 && isIdentifier(head)
      ? `; destructured parameters have no name: use a position such as <0.${head}>`
      : '';
  }
  if (!isIdentifier(head)) return `; use one of those names in the template`;
  if (head.length > 1 && real.every((n) => MINIFIED.test(n))) {
    return (
      `; these parameter names look minified (a bundler renamed them, and templates read names from the source): ` +
      `name the value explicitly with @KeyParam('${head}') on its parameter, or use a positional placeholder such as <0>`
    );
  }
  const lower = head.toLowerCase();
  const near = real.find((n) => lower.includes(n.toLowerCase()) || n.toLowerCase().includes(lower));
  const use = near ? `<${near}>` : 'one of those names';
  return (
    `; placeholders read the method's parameter names: ` +
    `use ${use} in the template, name the parameter with @KeyParam('${head}'), or pass a key function of the arguments`
  );
}

/**
 * The placeholder's value, validated and (for typed placeholders) canonical; long strings fail
 * before any scan.
 */
function readValue(
  p: Placeholder,
  args: readonly unknown[],
  template: string,
  budget: number,
): string | number | bigint {
  let value: unknown = args[p.index];
  for (const seg of p.path) {
    if (value === null || value === undefined) break;
    value =
      typeof value === 'object' || typeof value === 'function'
        ? (value as Record<string, unknown>)[seg]
        : undefined;
  }
  if (value === undefined || value === null)
    throw new LockKeyResolutionError(template, `<${p.text}> is missing`);
  if (typeof value === 'string') {
    if (value.length === 0)
      throw new LockKeyResolutionError(template, `<${p.text}> is an empty string`);
    if (value.length > budget) throw tooLong(p, template, value.length);
  }
  if (p.type) {
    const canonical = p.type.canonical(value);
    if (canonical === undefined)
      throw new LockKeyResolutionError(template, `<${p.text}> must be ${p.type.expected}`);
    return canonical;
  }
  if (typeof value === 'string') {
    if (LONE_SURROGATE.test(value))
      throw new LockKeyResolutionError(template, `<${p.text}> holds a lone UTF-16 surrogate`);
    return value;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value))
      throw new LockKeyResolutionError(template, `<${p.text}> is ${value}, not a finite number`);
    return value;
  }
  if (typeof value === 'bigint') return value;
  const kind = Array.isArray(value)
    ? 'an array'
    : typeof value === 'object'
      ? 'an object'
      : `a ${typeof value}`;
  throw new LockKeyResolutionError(
    template,
    `<${p.text}> is ${kind}; only strings and numbers can be part of a key`,
  );
}

/**
 * Encodes one value within what is left of the key's budget; the encoder stops as soon as it passes
 * it.
 */
function encodeWithin(
  value: string | number | bigint,
  budget: number,
  p: Placeholder,
  template: string,
): string {
  try {
    return encodeKeyPart(value, Math.max(0, budget));
  } catch (error) {
    if (error instanceof InvalidLockOptionsError)
      throw tooLong(p, template, String(value).length, true);
    throw error;
  }
}

function tooLong(
  p: Placeholder,
  template: string,
  length: number,
  encoded = false,
): LockKeyResolutionError {
  const what = encoded ? 'once encoded, is longer than' : `is ${length} characters, more than`;
  return new LockKeyResolutionError(
    template,
    `<${p.text}> ${what} the key has room for (a key holds at most ${MAX_KEY_LENGTH} characters)`,
  );
}

function compileKeyFunction(fn: LockKeyFn, where: string): CompiledLockKey {
  const template = `${fn.name || 'key function'} of ${where}`;
  return {
    template,
    resolve(args) {
      let key: unknown;
      try {
        key = fn(...args);
      } catch (error) {
        throw Object.assign(
          new LockKeyResolutionError(
            template,
            `the key function threw: ${(error as Error)?.message ?? error}`,
          ),
          { cause: error },
        );
      }
      if (typeof key !== 'string' || key.length === 0) {
        throw new LockKeyResolutionError(
          template,
          `the key function returned ${typeof key === 'string' ? 'an empty string' : typeof key}, not a non-empty string`,
        );
      }
      return key;
    },
  };
}
