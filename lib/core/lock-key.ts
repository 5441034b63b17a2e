import { encodeKeyPart, LONE_SURROGATE } from '../backend-kit/key-encoding';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockKeyResolutionError } from '../errors/lock-key-resolution.error';

/**
 * Key templates: `order:<id>`, `<dto.customer.id>`, `<0.id>` or a function of the arguments,
 * compiled once per decorated method. Values are encoded by the backend kit's encodeKeyPart.
 */
export type LockKeyFn = (...args: any[]) => string;
export type LockKey = string | LockKeyFn;

export interface CompiledLockKey {
  readonly template: string;
  /** Resolves the key from the call's arguments; throws LockKeyResolutionError (400 over HTTP). */
  resolve(args: readonly unknown[]): string;
}

const PLACEHOLDER = /<([^<>]*)>/g;
const IDENT = /^[A-Za-z_$][\w$]*$/;

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
