import { MAX_KEY_LENGTH } from '../distributed-lock.constants';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockKeyResolutionError } from '../errors/lock-key-resolution.error';

/**
 * Key templates and their encoding. Keys are a security boundary: a value interpolated from a
 * request is encoded so that it can never produce another lock's key, escape a path (`/`, `..`)
 * or change a Redis Cluster hash slot (`{`, `}`). Every character outside [A-Za-z0-9_-] becomes
 * %XX of its UTF-8 bytes, which is injective: two different values never encode alike.
 */
export type LockKeyFn = (...args: any[]) => string;
export type LockKey = string | LockKeyFn;

export interface CompiledLockKey {
  readonly template: string;
  /** Resolves the key from the call's arguments; throws LockKeyResolutionError (400 over HTTP). */
  resolve(args: readonly unknown[]): string;
}

const SAFE = /^[A-Za-z0-9_-]$/;
const PLACEHOLDER = /<([^<>]*)>/g;
const IDENT = /^[A-Za-z_$][\w$]*$/;
const CONTROL = /[\u0000-\u001f\u007f]/;
/** A UTF-16 surrogate that is not part of a pair: UTF-8 cannot carry it (it would become U+FFFD and collide). */
const LONE_SURROGATE = /\p{Cs}/u;

/** Encodes one value for use inside a key (exported for function keys that build their own). */
export function encodeKeyPart(value: string | number | bigint): string {
  if (LONE_SURROGATE.test(String(value))) {
    throw new InvalidLockOptionsError('key', value, 'text without lone UTF-16 surrogates (they cannot be encoded distinctly)');
  }
  let out = '';
  for (const ch of String(value)) {
    if (SAFE.test(ch)) out += ch;
    else for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Checks a final key (prefix included): a non-empty string, no control characters, within the limit. */
export function checkLockKey(key: unknown, maxLength = MAX_KEY_LENGTH): string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new InvalidLockOptionsError('key', key, 'a non-empty string');
  }
  if (key.length > maxLength) {
    throw new InvalidLockOptionsError('key', key, `at most ${maxLength} characters (got ${key.length})`);
  }
  if (CONTROL.test(key)) {
    throw new InvalidLockOptionsError('key', key, 'no control characters (encode values with encodeKeyPart)');
  }
  if (LONE_SURROGATE.test(key)) {
    throw new InvalidLockOptionsError('key', key, 'no lone UTF-16 surrogates (UTF-8 backends would merge them into U+FFFD)');
  }
  return key;
}

/** Reads parameter names from a function's source; destructured parameters have no name (null). */
export function parseParameterNames(fn: Function): (string | null)[] {
  const src = Function.prototype.toString.call(fn).replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
  const open = src.indexOf('(');
  if (open < 0) return [];
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  let quote: string | null = null;
  for (let i = open + 1; i < src.length; i++) {
    const ch = src[i];
    if (quote) {
      current += ch;
      if (ch === '\\') current += src[++i] ?? '';
      else if (ch === quote) quote = null;
      continue;
    }
    if (ch === '"' || ch === "'" || ch === '`') quote = ch;
    else if (ch === '(' || ch === '[' || ch === '{') depth++;
    else if (ch === ')' || ch === ']' || ch === '}') {
      if (depth === 0) break;
      depth--;
    } else if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
      continue;
    }
    current += ch;
  }
  if (current.trim()) parts.push(current);
  return parts.map((p) => {
    const name = p.trim().replace(/^\.\.\./, '').split('=')[0].trim();
    return IDENT.test(name) ? name : null;
  });
}

interface Placeholder {
  readonly text: string;
  readonly index: number;
  readonly path: readonly string[];
}

/**
 * Compiles `order:<id>`, `<dto.customer.id>` or `<0.id>` against the method's parameters.
 * A placeholder that names no parameter fails here, at startup, naming the method and its parameters.
 */
export function compileLockKey(key: LockKey, paramNames: readonly (string | null)[], where: string): CompiledLockKey {
  if (typeof key === 'function') return compileKeyFunction(key, where);
  if (typeof key !== 'string' || key.length === 0) {
    throw new InvalidLockOptionsError('key', key, `a non-empty template string or a function of the arguments (${where})`);
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
  return {
    template: key,
    resolve(args) {
      let out = literals[0];
      placeholders.forEach((p, i) => {
        out += encodeKeyPart(readValue(p, args, key)) + literals[i + 1];
      });
      return out;
    },
  };
}

function parsePlaceholder(text: string, template: string, paramNames: readonly (string | null)[], where: string): Placeholder {
  const [head, ...path] = text.split('.');
  const named = paramNames.map((n, i) => `${n ?? '<destructured>'} (${i})`).join(', ') || 'none';
  if (path.some((seg) => !/^[\w$]+$/.test(seg))) {
    throw new InvalidLockOptionsError('key', template, `placeholders like <name>, <name.path>, <0> or <1.id> (${where})`);
  }
  if (/^\d+$/.test(head)) {
    const index = Number(head);
    if (index >= paramNames.length) {
      throw new InvalidLockOptionsError('key', template, `<${head}> must be a parameter position of ${where}, whose parameters are: ${named}`);
    }
    return { text, index, path };
  }
  const index = paramNames.indexOf(head);
  if (!IDENT.test(head) || index < 0) {
    throw new InvalidLockOptionsError('key', template, `<${head}> must name a parameter of ${where}, whose parameters are: ${named}`);
  }
  return { text, index, path };
}

function readValue(p: Placeholder, args: readonly unknown[], template: string): string | number | bigint {
  let value: unknown = args[p.index];
  for (const seg of p.path) {
    if (value === null || value === undefined) break;
    value = typeof value === 'object' || typeof value === 'function' ? (value as Record<string, unknown>)[seg] : undefined;
  }
  if (value === undefined || value === null) throw new LockKeyResolutionError(template, `<${p.text}> is missing`);
  if (typeof value === 'string') {
    if (value.length === 0) throw new LockKeyResolutionError(template, `<${p.text}> is an empty string`);
    if (LONE_SURROGATE.test(value)) throw new LockKeyResolutionError(template, `<${p.text}> holds a lone UTF-16 surrogate`);
    return value;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new LockKeyResolutionError(template, `<${p.text}> is ${value}, not a finite number`);
    return value;
  }
  if (typeof value === 'bigint') return value;
  const kind = Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
  throw new LockKeyResolutionError(template, `<${p.text}> is ${kind}; only strings and numbers can be part of a key`);
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
        throw Object.assign(new LockKeyResolutionError(template, `the key function threw: ${(error as Error)?.message ?? error}`), { cause: error });
      }
      if (typeof key !== 'string' || key.length === 0) {
        throw new LockKeyResolutionError(template, `the key function returned ${typeof key === 'string' ? 'an empty string' : typeof key}, not a non-empty string`);
      }
      return key;
    },
  };
}
