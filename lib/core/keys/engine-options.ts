import { LONE_SURROGATE } from '../../backend-kit/key-encoding';
import { checkKnownOptions } from '../../backend-kit/option-checker';
import {
  DEFAULT_BACKEND_NAME,
  DEFAULT_KEY_PREFIX,
  DEFAULT_OPERATION_TIMEOUT_MS,
} from '../../distributed-lock.constants';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { hostname } from 'node:os';
import type { LockBackend, LockHolderIdentity } from '../../interfaces/lock-backend.interface';
import type { LockDefaults } from '../../interfaces/lock-options.interface';
import { checkDuration, resolveDefaults } from './lock-options';
import type { LockEventListener } from '../activity/lock-events';

export interface LockEngineOptions {
  /** One backend (registered as 'default')... */
  backend?: LockBackend;
  /** ...or several by name, one of them named 'default'. */
  backends?: Record<string, LockBackend>;
  /** Prepended to every key. Default 'lock:'. */
  keyPrefix?: string;
  defaults?: LockDefaults;
  /**
   * ms one backend call may take when the wait budget is smaller (wait: 0, release, extend).
   * Default 2000.
   */
  operationTimeout?: number;
  /** Called synchronously with every LockEvent (acquired, busy, released, lost, ...). */
  onEvent?: LockEventListener;
  /**
   * This app's name as the holder of its locks: stored with each grant beside the host name and
   * pid, and shown by inspect(), the live view and the CLI. Default `<host name>:<pid>`.
   */
  instance?: string;
}

/**
 * Module options the engine reads, plus those the Nest layer reads (isGlobal, requestLifecycle,
 * httpErrors, errorMapping, exposeErrorDetails, and the observability ones): every name a user may
 * write, so an unknown option's message lists them all and suggests the nearest.
 */
const ENGINE_OPTIONS = [
  'backend',
  'backends',
  'keyPrefix',
  'defaults',
  'operationTimeout',
  'onEvent',
  'instance',
  'isGlobal',
  'requestLifecycle',
  'httpErrors',
  'errorMapping',
  'exposeErrorDetails',
  'logging',
  'checkOnStartup',
  'telemetry',
  'eventEmitter',
];

export function validateEngineOptions(options: LockEngineOptions) {
  if (options === null || typeof options !== 'object')
    throw new InvalidLockOptionsError('options', options, 'an object');
  checkKnownOptions('', options, ENGINE_OPTIONS);
  const backends = new Map<string, LockBackend>();
  if (options.backend !== undefined && options.backends !== undefined) {
    throw new InvalidLockOptionsError(
      'backends',
      options.backends,
      'either "backend" or "backends", not both',
    );
  }
  if (options.backends !== undefined) {
    if (options.backends === null || typeof options.backends !== 'object')
      throw new InvalidLockOptionsError(
        'backends',
        options.backends,
        'an object of named LockBackend instances',
      );
    for (const [name, b] of Object.entries(options.backends))
      backends.set(name, checkBackend(`backends.${name}`, b));
    if (!backends.has(DEFAULT_BACKEND_NAME)) {
      throw new InvalidLockOptionsError(
        'backends',
        Object.keys(options.backends).join(', '),
        `a set of backends with one named '${DEFAULT_BACKEND_NAME}'`,
      );
    }
  } else if (options.backend !== undefined) {
    backends.set(DEFAULT_BACKEND_NAME, checkBackend('backend', options.backend));
  } else {
    throw new InvalidLockOptionsError(
      'backend',
      undefined,
      'a LockBackend instance (e.g. new MemoryLockBackend()) or "backends"',
    );
  }
  return {
    backends,
    keyPrefix: checkKeyPrefix(options.keyPrefix ?? DEFAULT_KEY_PREFIX),
    holder: holderIdentity(options.instance),
    defaults: resolveDefaults(options.defaults),
    operationTimeout:
      options.operationTimeout === undefined
        ? DEFAULT_OPERATION_TIMEOUT_MS
        : checkDuration('operationTimeout', options.operationTimeout, 1),
  };
}

function checkKeyPrefix(keyPrefix: string): string {
  if (
    typeof keyPrefix !== 'string' ||
    keyPrefix.length > 128 ||
    /[\u0000-\u001f\u007f{}]/.test(keyPrefix) ||
    LONE_SURROGATE.test(keyPrefix)
  ) {
    throw new InvalidLockOptionsError(
      'keyPrefix',
      keyPrefix,
      'a string of at most 128 characters without control characters, { } or lone UTF-16 surrogates',
    );
  }
  return keyPrefix;
}

/** Who holds this engine's grants (LockHolderIdentity): one frozen object for every attempt. */
function holderIdentity(instance: unknown): LockHolderIdentity {
  const host = hostname().slice(0, 64);
  if (
    instance !== undefined &&
    (typeof instance !== 'string' ||
      instance.length === 0 ||
      instance.length > 128 ||
      /[\u0000-\u001f\u007f]/.test(instance))
  )
    throw new InvalidLockOptionsError(
      'instance',
      instance,
      'a string of 1 to 128 characters without control characters',
    );
  return Object.freeze({ host, pid: process.pid, instance: instance ?? `${host}:${process.pid}` });
}

function checkBackend(option: string, b: unknown): LockBackend {
  const ok =
    b !== null &&
    typeof b === 'object' &&
    ['tryAcquire', 'renew', 'release', 'close'].every(
      (m) => typeof (b as Record<string, unknown>)[m] === 'function',
    ) &&
    typeof (b as LockBackend).capabilities === 'object';
  if (!ok)
    throw new InvalidLockOptionsError(
      option,
      b,
      'a LockBackend instance (MemoryLockBackend, RedisLockBackend, ...)',
    );
  return b as LockBackend;
}
