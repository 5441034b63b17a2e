export { LockTestingHelper } from './lock-testing.helper';
export { LockTesting } from './lock-testing';
export type { LockTestingApp } from './lock-testing';
