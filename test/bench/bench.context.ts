import type { BenchServers, System } from './bench.servers';
import type { WorkerPool } from './bench.workers';
import { ours, type Contender } from './bench.contenders';
import {
  etcd3Lock,
  rawIoredis,
  redisSemaphore,
  redlockSingle,
  redlockTriple,
} from './bench.competitors';

/** What every scenario gets from the runner. */
export interface BenchContext {
  servers: BenchServers;
  quick: boolean;
  /** Systems this run covers (all by default; `--systems=redis,etcd` narrows it). */
  systems: System[];
  log(line: string): void;
  /** The worker processes of the contended scenarios (started on first use, stopped by the runner). */
  workerPool(): Promise<WorkerPool>;
  /** `--in-process`: contended clients all run in this process instead of in worker processes. */
  inProcess: boolean;
}

export const ALL_SYSTEMS: System[] = [
  'memory',
  'redis',
  'redlock',
  'etcd',
  'zookeeper',
  'mysql',
  'postgres',
];

/** Ours first, then the competitors on the same system. */
export function contendersFor(system: System, opts: { raw?: boolean } = {}): Contender[] {
  switch (system) {
    case 'redis':
      return [ours('redis'), ...(opts.raw ? [rawIoredis] : []), redlockSingle, redisSemaphore];
    case 'redlock':
      return [ours('redlock'), redlockTriple];
    case 'etcd':
      return [ours('etcd'), etcd3Lock];
    default:
      return [ours(system)];
  }
}

/** A system is skipped (and reported as such) when its backend or server harness has not landed. */
export interface Skipped {
  system: System;
  reason: string;
}

/** Best available description of an error for the report. */
export function reason(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message.split('\n')[0]}` : String(error);
}
