import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { LEADER_ONLY_METADATA, LOCKED_METADATA } from '../distributed-lock.constants';
import type { LeaderOnlyMethod } from '../decorators/leader-only.decorator';
import { LockEngine } from '../core/lock-engine';
import type { LockedMethod } from '../interfaces/locked-method.interface';
import { engineRegistry } from '../core/engine-registry';
import { checkTemplatesDisjoint, type TemplateUse } from '../core/keys/template-overlap';
import { DISTRIBUTED_LOCK_MODULE_OPTIONS } from '../distributed-lock.module-definition';
import { bindToGateways } from '../filters/gateway-enhancers';
import { markScheduled } from '../decorators/locked-invoker';
import type { DistributedLockModuleOptions } from '../interfaces/distributed-lock-module-options.interface';
import { LOCK_LOGGER_CONTEXT } from '../observability/lock-logger';

/**
 * @nestjs/schedule's metadata keys (its constants, read by name: the package stays optional).
 */
const SCHEDULE_KEYS = [
  'SCHEDULE_CRON_OPTIONS',
  'SCHEDULE_INTERVAL_OPTIONS',
  'SCHEDULE_TIMEOUT_OPTIONS',
];

function isScheduled(fn: unknown): boolean {
  return typeof fn === 'function' && SCHEDULE_KEYS.some((k) => Reflect.hasMetadata(k, fn));
}

/**
 * At bootstrap, finds every provider and controller with @Locked methods, binds them to this
 * module's engine, and checks what @Locked could not check at definition time (backend names, and
 * that keys of two different templates on one backend never meet), so a wrong name or an
 * overlapping template fails start-up rather than a call.
 */
@Injectable()
export class LockedExplorer implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly campaigns: LeaderOnlyMethod[] = [];
  private readonly logger = new Logger(LOCK_LOGGER_CONTEXT);
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    @Inject(LockEngine) private readonly engine: LockEngine,
    @Inject(DISTRIBUTED_LOCK_MODULE_OPTIONS) options: DistributedLockModuleOptions,
  ) {
    // Built at compile(): @Locked methods of this module's instances work before init().
    engineRegistry.open(this.engine, (instance) => this.owns(instance));
    const classes = [...this.discovery.getProviders(), ...this.discovery.getControllers()];
    bindToGateways(new Set(classes.map((w) => w.metatype)), options ?? {});
  }

  /** Whether `instance` is one of the providers or controllers Nest created in this container. */
  private owns(instance: object): boolean {
    return [...this.discovery.getProviders(), ...this.discovery.getControllers()].some(
      (w) => w.instance === instance,
    );
  }

  onModuleInit(): void {
    engineRegistry.open(this.engine);
    const wrappers = [...this.discovery.getProviders(), ...this.discovery.getControllers()];
    const templates = new Map<string, TemplateUse[]>(); // by backend
    for (const wrapper of wrappers) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || typeof instance !== 'object') continue;
      const proto = Object.getPrototypeOf(instance);
      if (!proto) continue;
      let found = false;
      for (const name of this.scanner.getAllMethodNames(proto)) {
        const leader = Reflect.getMetadata(LEADER_ONLY_METADATA, proto[name]) as
          LeaderOnlyMethod | undefined;
        if (leader) {
          found = true;
          this.engine.resolveOptions(
            { ttl: leader.options.ttl, backend: leader.options.backend },
            leader.name,
          );
          this.campaigns.push(leader);
        }
        const method = Reflect.getMetadata(LOCKED_METADATA, proto[name]) as
          LockedMethod | undefined;
        if (!method) continue;
        found = true;
        if (isScheduled(proto[name])) this.scheduled(method);
        const { retryAfter: _retryAfter, ...lockOptions } = method.options;
        const resolved = this.engine.resolveOptions(
          { ...lockOptions, onBusy: undefined } as never,
          method.where,
        );
        let uses = templates.get(resolved.backend);
        if (!uses) templates.set(resolved.backend, (uses = []));
        for (const { template, literals } of method.key.parts ?? [method.key])
          if (literals) uses.push({ template, literals, where: method.where });
      }
      if (found) engineRegistry.register(instance, this.engine);
    }
    for (const uses of templates.values()) checkTemplatesDisjoint(uses);
  }

  /**
   * A @Locked method that @nestjs/schedule calls: a tick whose wait runs out is skipped, not an
   * ERROR with a stack from the scheduler. With onBusy 'wait' (the default), a losing instance
   * waits and may then run the same tick again once the winner is done: said once, at start-up.
   */
  private scheduled(method: LockedMethod): void {
    markScheduled(method);
    const onBusy = method.options.onBusy ?? this.engine.defaults.onBusy;
    if (onBusy !== 'wait') return;
    this.logger.warn(
      `${method.where} is scheduled (@Cron/@Interval/@Timeout) and @Locked with onBusy 'wait': ` +
        'an instance that finds the lock busy waits, then runs the same tick again once the ' +
        "holder is done. For one run per tick use @LockedJob(name, { minHold }) or onBusy: 'skip'",
    );
  }

  /** Campaigns start once the application is up (not while modules are still initialising). */
  onApplicationBootstrap(): void {
    for (const c of this.campaigns) this.engine.leadership(c.name, c.options);
  }

  onApplicationShutdown(): void {
    engineRegistry.close(this.engine);
  }
}
