/**
 * `nestjs-distributed-lock/testing`: holding a key from a test so the code under test finds it
 * busy, and serving `@Locked` methods of instances made with `new` (docs/guide/testing.md).
 */
export { LockTestingHelper } from './lock-testing.helper';
export { LockTesting } from './lock-testing';
export type { LockTestingApp } from './lock-testing';
