import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { checkFencingSecret } from './fencing-carrier';
import { FENCED_METADATA, FencedInterceptor, type FencedOptions } from './fenced.interceptor';

/**
 * Fences a controller or message handler (or every handler of a class): a call must carry a lock
 * grant (`fencingHeaders(handle)` / `withFencing(payload, handle)` on the caller's side) whose
 * token is current for its resource; a stale call gets 409 STALE_FENCING_TOKEN and the handler
 * does not run. The check runs after every guard (it is an interceptor), so a call your guards
 * reject leaves no trace in the fence.
 */
export function Fenced(options: FencedOptions = {}): ClassDecorator & MethodDecorator {
  const { keys, maxKeyLength, secret } = options;
  if (secret !== undefined) for (const s of [secret].flat()) checkFencingSecret(s);
  if (maxKeyLength !== undefined && !(Number.isSafeInteger(maxKeyLength) && maxKeyLength > 0))
    throw new InvalidLockOptionsError('maxKeyLength', maxKeyLength, 'a positive integer');
  // A /g or /y regex keeps lastIndex between test() calls: the same key would pass, then fail.
  const stateless =
    keys instanceof RegExp && /[gy]/.test(keys.flags)
      ? { ...options, keys: new RegExp(keys.source, keys.flags.replace(/[gy]/g, '')) }
      : options;
  return applyDecorators(
    SetMetadata(FENCED_METADATA, stateless),
    UseInterceptors(FencedInterceptor),
  );
}
