import 'reflect-metadata';
import { isIdentifier } from '../core/keys/parameter-names';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';

/** Metadata on (prototype, method): `{ [parameterIndex]: name }` given by @KeyParam. */
export const KEY_PARAM_METADATA = 'nestjs-distributed-lock:key-params';

/**
 * Names a parameter for the key template of @Locked: `pay(@KeyParam('orderId') id: string)` makes
 * `<orderId>` (and `<orderId.path>`) read it. Templates otherwise read names from the method's
 * source, which a minifying bundler rewrites (`pay(e, t)`); the name given here is a string in the
 * code, so it survives minification. Positional placeholders (`<0>`) need no name at all.
 */
export function KeyParam(name: string): ParameterDecorator {
  if (!isIdentifier(name)) {
    throw new InvalidLockOptionsError(
      '@KeyParam',
      name,
      'an identifier such as "id" or "orderId" (the name a <placeholder> uses)',
    );
  }
  return (target, propertyKey, index) => {
    const where = `${(target as { constructor?: Function }).constructor?.name ?? 'anonymous'}.${String(propertyKey)}()`;
    if (propertyKey === undefined)
      throw new InvalidLockOptionsError(
        '@KeyParam',
        name,
        `a method parameter, not a constructor parameter (${where})`,
      );
    const names: Record<number, string> = {
      ...(Reflect.getMetadata(KEY_PARAM_METADATA, target, propertyKey) ?? {}),
    };
    if (Object.values(names).includes(name)) {
      throw new InvalidLockOptionsError(
        '@KeyParam',
        name,
        `a name used by one parameter only (${where})`,
      );
    }
    names[index] = name;
    Reflect.defineMetadata(KEY_PARAM_METADATA, names, target, propertyKey);
  };
}

/**
 * The parameter names of a method for its key template: parsed from its source, overridden by
 * @KeyParam.
 */
export function keyParameterNames(
  parsed: readonly (string | null)[],
  target: object,
  propertyKey: string | symbol,
): (string | null)[] {
  const explicit: Record<number, string> =
    Reflect.getMetadata(KEY_PARAM_METADATA, target, propertyKey) ?? {};
  const names = [...parsed];
  for (const [at, name] of Object.entries(explicit)) {
    // An explicit name wins over a parsed one that happens to be spelled alike at another position.
    for (let i = 0; i < names.length; i++) if (names[i] === name) names[i] = null;
    while (names.length <= Number(at)) names.push(null);
    names[Number(at)] = name;
  }
  return names;
}
