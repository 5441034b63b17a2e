import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { checkDuration } from '../core/keys/lock-options';
import { MIN_TTL_MS } from '../distributed-lock.constants';
import { Locked, type LockedMethodDecorator } from './locked.decorator';

/** Options of `@LockedJob(name, options)`. All durations in ms. */
export interface LockedJobOptions {
  /**
   * Required: the lock stays held at least this long from the grant even when the job ends sooner
   * (lockAtLeastFor). Choose it larger than the clock skew between instances and smaller than the
   * schedule's interval (e.g. 500 for a job every second, 30_000 for one every 5 minutes).
   */
  minHold: number;
  /**
   * Stop renewing after this long (lockAtMostFor): bounds a hung job. Default: renew while it runs.
   */
  maxHold?: number;
  /** ms the lock survives a crashed instance. Default: the module's default ttl. */
  ttl?: number;
  /** Registered backend name. Default 'default'. */
  backend?: string;
}

/**
 * A scheduled job that runs on ONE instance per tick. Stack it with `@Cron`, `@Interval` or
 * `@Timeout` of @nestjs/schedule in either order. Every instance's scheduler fires; each tries the
 * lock `job:<name>` once (onBusy 'skip', wait 0): the first runs the job, the others return
 * undefined at once. `minHold` keeps the lock after a short job ends, so an instance whose clock or
 * timer runs late by less than minHold still finds it busy and skips the same tick (ShedLock's
 * lockAtLeastFor). A crash mid-job frees the lock after its ttl; the job does not run again until
 * the next tick. See docs/guide/scheduling.md for per-fire keys and leader election.
 */
export function LockedJob(name: string, options: LockedJobOptions): LockedMethodDecorator<any[]> {
  if (typeof name !== 'string' || !/^[\w.:-]{1,200}$/.test(name)) {
    throw new InvalidLockOptionsError(
      '@LockedJob name',
      name,
      'a job name of letters, digits and _ . : - (1 to 200 characters)',
    );
  }
  if (options === null || typeof options !== 'object') {
    throw new InvalidLockOptionsError(
      '@LockedJob options',
      options,
      '{ minHold, maxHold?, ttl?, backend? }',
    );
  }
  const known = ['minHold', 'maxHold', 'ttl', 'backend'];
  for (const option of Object.keys(options)) {
    if (!known.includes(option)) {
      throw new InvalidLockOptionsError(
        option,
        (options as unknown as Record<string, unknown>)[option],
        `one of ${known.join(', ')} (unknown option of @LockedJob('${name}'))`,
      );
    }
  }
  checkDuration('minHold', options.minHold, 1, name);
  if (options.ttl !== undefined) checkDuration('ttl', options.ttl, MIN_TTL_MS, name);
  return Locked(`job:${name}`, { ...options, onBusy: 'skip', wait: 0 });
}
