import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { compileLockKey, type CompiledLockKey, type LockKey } from './lock-key';

/** One key, or several taken together as one all-or-nothing grant. */
export type LockKeys = string | readonly string[];

/** Deduplicated keys in the one canonical order every process uses (UTF-16 code unit order). */
export function canonicalKeys(keys: readonly unknown[]): string[] {
  if (keys.length === 0)
    throw new InvalidLockOptionsError('key', keys, 'a key, or a non-empty array of keys');
  for (const k of keys) {
    if (typeof k !== 'string' || k.length === 0)
      throw new InvalidLockOptionsError('key', k, 'non-empty strings in the key array');
  }
  return [...new Set(keys as string[])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** A compiled template, or a compiled array of templates (a multi-key @Locked). */
export interface CompiledLockKeys {
  readonly template: string;
  /** A single template's literal parts (see CompiledLockKey.literals). */
  readonly literals?: readonly string[];
  /** The templates of a key array, one each (absent for a single key: it is its own part). */
  readonly parts?: readonly CompiledLockKey[];
  resolve(args: readonly unknown[]): string | string[];
}

/** Compiles `key` or each template of a key array against the method's parameters. */
export function compileLockKeys(
  key: LockKey | readonly string[],
  paramNames: readonly (string | null)[],
  where: string,
): CompiledLockKeys {
  if (!Array.isArray(key)) return compileLockKey(key as LockKey, paramNames, where);
  if (key.length === 0)
    throw new InvalidLockOptionsError('key', key, `a non-empty array of key templates (${where})`);
  const parts: CompiledLockKey[] = key.map((k) => compileLockKey(k, paramNames, where));
  return {
    template: parts.map((p) => p.template).join(', '),
    parts,
    resolve: (args) => parts.map((p) => p.resolve(args)),
  };
}
