import 'reflect-metadata';
import { engineRegistry } from '../core/engine-registry';
import type { CampaignOptions } from '../recipes/election';
import { LEADER_ONLY_METADATA } from '../distributed-lock.constants';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';

/**
 * What @LeaderOnly recorded about one method (read by the explorer to start campaigns at
 * bootstrap).
 */
export interface LeaderOnlyMethod {
  readonly name: string;
  readonly options: CampaignOptions;
}

/**
 * Runs the method only while this instance leads the election `name`; elsewhere it returns
 * undefined without running. The module starts the campaign at bootstrap for every @LeaderOnly
 * method it finds, so one instance of the fleet leads at a time (see Leadership). Stack it with
 * `@Interval`/`@Cron` for "exactly one instance runs this while it lives"; for a long-running
 * consumer, inject LockService and use `campaign(name).whenLeader()` and the term's signal.
 */
export function LeaderOnly(name: string, options: CampaignOptions = {}): MethodDecorator {
  if (typeof name !== 'string' || !/^[\w.:-]{1,200}$/.test(name)) {
    throw new InvalidLockOptionsError(
      '@LeaderOnly name',
      name,
      'an election name of letters, digits and _ . : - (1 to 200 characters)',
    );
  }
  return (target, propertyKey, descriptor: PropertyDescriptor) => {
    const original = descriptor?.value;
    const where = `${(target as { constructor: Function }).constructor?.name ?? 'anonymous'}.${String(propertyKey)}()`;
    if (typeof original !== 'function')
      throw new InvalidLockOptionsError('@LeaderOnly', original, `a method (${where})`);
    const meta: LeaderOnlyMethod = { name, options: { ...options } };
    const wrapper = function (this: unknown, ...args: unknown[]) {
      const engine = engineRegistry.find(this, where);
      // A module that shut down leads nothing.
      if (engine.isClosed) return undefined;
      return engine.leadership(name, options).isLeader ? original.apply(this, args) : undefined;
    };
    for (const metaKey of Reflect.getMetadataKeys(original)) {
      Reflect.defineMetadata(metaKey, Reflect.getMetadata(metaKey, original), wrapper);
    }
    Object.defineProperty(wrapper, 'name', { value: original.name });
    Reflect.defineMetadata(LEADER_ONLY_METADATA, meta, wrapper);
    descriptor.value = wrapper;
    return descriptor;
  };
}
