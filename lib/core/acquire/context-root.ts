import { AsyncResource } from 'node:async_hooks';

/**
 * An async context of the library's own (never a caller's) that timers and callbacks run in, so
 * one request's reentrancy scope cannot leak into everyone's. It holds no handle: `hasRef` says
 * so to leak detectors (Jest's --detectOpenHandles), which otherwise report every live one.
 */
export class ContextRoot extends AsyncResource {
  hasRef(): boolean {
    return false;
  }
}
