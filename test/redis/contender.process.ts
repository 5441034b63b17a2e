/**
 * One contender of the failover specs in its own OS process: its own ioredis client (the Cluster
 * or Sentinel client docs/backends/redis-production.md shows) and its own LockEngine.
 * argv: a JSON config { client: { kind: 'cluster', ports } | { kind: 'sentinel', sentinels, name },
 * keyPrefix }. Reports `ready` once its client answers. Commands:
 * - `contend` { key, log, counter }: loops `withLock(key, ttl 30 s, wait WAIT_MS)` with a 1 s hold
 *   until `stop`. Inside, it appends `enter <token> <pid>` to the `log` file (O_APPEND: one write
 *   each, never interleaved), reads the `counter` file, holds 1 s, writes it back plus one, and
 *   appends `exit <token> <pid>`; reports `granted` { token, at } (at: epoch ms, sub-ms) and, for
 *   a failed call, `failed` { name, message, ms }.
 * - `stop`: ends the loop after the call in flight and reports `stopped` { sections }.
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { Cluster, Redis } from 'ioredis';
import { RedisLockBackend } from '../../lib/backends/redis/redis.backend';
import { LockEngine } from '../../lib/core/lock-engine';
import { runHolder, type HolderMessage } from '../support/holder-harness';
import { CONTENDER_OPERATION_TIMEOUT_MS, WAIT_MS } from './contention';

type ClientConfig =
  | { kind: 'cluster'; ports: number[] }
  | { kind: 'sentinel'; sentinels: { host: string; port: number }[]; name: string };

const now = () => performance.timeOrigin + performance.now();

function client(config: ClientConfig): Redis | Cluster {
  const c =
    config.kind === 'cluster'
      ? new Cluster(
          config.ports.map((port) => ({ host: '127.0.0.1', port })),
          {
            slotsRefreshInterval: 1_000,
            retryDelayOnFailover: 100,
            retryDelayOnClusterDown: 100,
            retryDelayOnTryAgain: 100,
            redisOptions: { commandTimeout: 1_000, maxRetriesPerRequest: 1 },
          },
        )
      : new Redis({
          sentinels: config.sentinels,
          name: config.name,
          failoverDetector: true,
          commandTimeout: 1_000,
          maxRetriesPerRequest: 1,
        });
  c.on('error', () => undefined);
  return c;
}

runHolder(async (channel) => {
  const config = JSON.parse(process.argv[2]) as { client: ClientConfig; keyPrefix: string };
  const redis = client(config.client);
  await redis.ping();
  const engine = new LockEngine({
    backend: new RedisLockBackend({ client: redis }),
    keyPrefix: config.keyPrefix,
    operationTimeout: CONTENDER_OPERATION_TIMEOUT_MS,
    defaults: { ttl: 30_000, wait: WAIT_MS },
  });
  let stopped = true;
  let loop: Promise<void> = Promise.resolve();
  let sections = 0;
  const contend = async (key: string, log: string, counter: string) => {
    while (!stopped) {
      const started = now();
      try {
        await engine.withLock(
          key,
          async (h) => {
            appendFileSync(log, `enter ${h.fencingToken} ${process.pid}\n`);
            channel.send({ type: 'granted', token: String(h.fencingToken), at: now() });
            const read = Number(readFileSync(counter, 'utf8') || '0');
            await new Promise((r) => setTimeout(r, 1_000)); // the work of a 1 s hold
            writeFileSync(counter, String(read + 1));
            sections++;
            appendFileSync(log, `exit ${h.fencingToken} ${process.pid}\n`);
          },
          { ttl: 30_000, wait: WAIT_MS },
        );
      } catch (error) {
        const e = error as Error;
        channel.send({ type: 'failed', name: e.name, message: e.message, ms: now() - started });
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  channel.onCommand((command: HolderMessage) => {
    if (command.type === 'contend') {
      stopped = false;
      sections = 0;
      loop = contend(String(command.key), String(command.log), String(command.counter));
    } else if (command.type === 'stop') {
      stopped = true;
      void loop.then(() => channel.send({ type: 'stopped', sections }));
    }
  });
  channel.send({ type: 'ready' });
});
