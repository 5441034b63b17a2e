import { applyDecorators, SetMetadata, UseGuards } from '@nestjs/common';
import { FENCED_METADATA, FencedGuard, type FencedOptions } from './fenced.guard';

/**
 * Fences a controller or message handler (or every handler of a class): a call must carry a lock
 * grant (`fencingHeaders(handle)` / `withFencing(payload, handle)` on the caller's side) whose
 * token is not older than the last one accepted for its resource; a stale call gets 409
 * STALE_FENCING_TOKEN and the handler does not run.
 */
export function Fenced(options: FencedOptions = {}): ClassDecorator & MethodDecorator {
  return applyDecorators(SetMetadata(FENCED_METADATA, options), UseGuards(FencedGuard));
}
