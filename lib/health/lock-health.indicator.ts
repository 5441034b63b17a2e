import { Inject, Injectable } from '@nestjs/common';
import { LockEngine } from '../core/lock-engine';
import type { BackendProbeResult } from '../core/activity/lock-operations';

/** One entry of a Terminus health result: `{ [key]: { status, ...details } }`. */
export type LockHealthResult = Record<string, { status: 'up' | 'down'; [detail: string]: unknown }>;

/**
 * A @nestjs/terminus health indicator for the lock backends. Each check makes one real round trip
 * per backend: its ping() where it has one (memory; others as their helpers add it), else
 * inspect() of a probe key, else a tryAcquire + release of the probe key (a busy answer counts as
 * up: the backend answered). A backend that does not answer within the module's operationTimeout
 * is `down` with a generic reason (no driver text: a health answer often reaches a public
 * endpoint, and `connect ECONNREFUSED 10.0.0.5:5432` names an address). The result has Terminus's
 * shape (`{ [key]: { status, ... } }`), so it works with HealthCheckService.check() without this
 * package importing @nestjs/terminus.
 *
 * ```ts
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.locks.isHealthy('locks')]); }
 * ```
 */
@Injectable()
export class DistributedLockHealthIndicator {
  constructor(@Inject(LockEngine) private readonly engine: LockEngine) {}

  /** All registered backends (down if any is down), or only `backend`. */
  async isHealthy(key = 'distributed-lock', backend?: string): Promise<LockHealthResult> {
    const results = await this.engine.operator.probe(backend === undefined ? undefined : [backend]);
    const down = results.filter((r) => r.status === 'down');
    const backends = Object.fromEntries(results.map((r) => [r.backend, details(r)]));
    const status = down.length === 0 ? 'up' : 'down';
    const message =
      down.length === 0
        ? undefined
        : down.map((r) => `${r.backend} (${r.kind}): ${publicReason(r)}`).join('; ');
    return { [key]: { status, ...(message ? { message } : {}), backends } };
  }
}

function details(r: BackendProbeResult) {
  return {
    status: r.status,
    kind: r.kind,
    via: r.via,
    latencyMs: r.latencyMs,
    ...(r.status === 'down' ? { reason: publicReason(r) } : {}),
  };
}

/** Our own budget's text ("... got no answer within 500 ms") names no address: kept. */
const NO_ANSWER = /got no answer within \d+ ms/;

/** Why a backend is down, in words that carry nothing of the driver's error text. */
function publicReason(r: BackendProbeResult): string {
  if (r.reason && NO_ANSWER.test(r.reason)) return `no answer within the operation timeout`;
  if (r.code === 'LOCK_BACKEND_UNAVAILABLE') return 'the backend is unavailable';
  return r.code ? `the probe failed (${r.code})` : 'the probe failed';
}
