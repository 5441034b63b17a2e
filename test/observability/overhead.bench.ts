/**
 * Overhead of the lock instrumentation on the uncontended acquire + release cycle (not a spec:
 * run by hand, prints a table; timings are never asserted). Configurations, alternated in rounds:
 *   base     - the engine at LIB_BASE (e.g. an export of the commit before the instrumentation), if set
 *   absent   - this engine, nothing subscribed (what you get without @opentelemetry/api and logging: false)
 *   logger   - + the Nest Logger bridge at its default level ('log': no line written per cycle)
 *   otel-noop- + OpenTelemetry with @opentelemetry/api installed and no SDK registered (no exporter)
 *   otel-sdk - + a registered SDK (tracer provider without processors, meter provider with a reader that never exports)
 * Usage: npx ts-node --transpile-only test/observability/overhead.bench.ts [memory|redis] [cycles]
 */
import { Logger } from '@nestjs/common';
import { metrics, trace } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import Redis from 'ioredis';
import { LockEngine, MemoryLockBackend, RedisLockBackend } from '../../lib';
import { subscribeLockLogger } from '../../lib/observability/lock-logger';
import { instrumentEngine, loadOpenTelemetry } from '../../lib/observability/lock-telemetry';
import { RedisServer } from '../support/redis-server';

type Engine = {
  acquire(key: string, o?: object): Promise<{ release(): Promise<void> }>;
  close(): Promise<void>;
};

async function cycle(engine: Engine, n: number): Promise<number> {
  // CPU time of this process, not wall time: on a loaded machine wall time measures the neighbours.
  const t = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const h = await engine.acquire('bench:key', { wait: 0 });
    await h.release();
  }
  const used = process.cpuUsage(t);
  return (n / (used.user + used.system)) * 1e6;
}

async function main(): Promise<void> {
  const kind = process.argv[2] ?? 'memory';
  const n = Number(process.argv[3] ?? (kind === 'memory' ? 5_000 : 1_000));
  const server = kind === 'redis' ? await RedisServer.start() : undefined;
  const clients: Redis[] = [];
  const backend = () => {
    if (!server) return new MemoryLockBackend();
    const client = new Redis({ port: server.port, host: '127.0.0.1' });
    clients.push(client);
    return new RedisLockBackend({ client });
  };
  const api = loadOpenTelemetry();
  if (!api) throw new Error('@opentelemetry/api is not installed');
  const configs: Record<string, () => Engine> = {};
  if (process.env.LIB_BASE) {
    const base = require(process.env.LIB_BASE) as {
      LockEngine: new (o: object) => Engine;
      MemoryLockBackend: new () => object;
      RedisLockBackend: new (o: object) => object;
    };
    configs.base = () => {
      if (!server) return new base.LockEngine({ backend: new base.MemoryLockBackend() });
      const client = new Redis({ port: server.port, host: '127.0.0.1' });
      clients.push(client);
      return new base.LockEngine({ backend: new base.RedisLockBackend({ client }) });
    };
  }
  configs.absent = () => new LockEngine({ backend: backend() });
  configs.logger = () => {
    const e = new LockEngine({ backend: backend() });
    subscribeLockLogger(e.events, new Logger('DistributedLock'), 'log');
    return e;
  };
  configs['otel-noop'] = () => {
    const e = new LockEngine({ backend: backend() });
    subscribeLockLogger(e.events, new Logger('DistributedLock'), 'log');
    instrumentEngine(e, api);
    return e;
  };
  let sdk: { stop(): Promise<void> } | undefined;
  configs['otel-sdk'] = () => {
    if (!sdk) {
      const tp = new BasicTracerProvider();
      const mp = new MeterProvider({
        readers: [
          new PeriodicExportingMetricReader({
            exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
            exportIntervalMillis: 3_600_000,
          }),
        ],
      });
      trace.setGlobalTracerProvider(tp);
      metrics.setGlobalMeterProvider(mp);
      sdk = { stop: async () => void (await Promise.all([tp.shutdown(), mp.shutdown()])) };
    }
    const e = new LockEngine({ backend: backend() });
    subscribeLockLogger(e.events, new Logger('DistributedLock'), 'log');
    instrumentEngine(e, api);
    return e;
  };
  // ONLY=<name>: measure one configuration in this process (no inline caches shared with the others).
  if (process.env.ONLY)
    for (const k of Object.keys(configs)) if (k !== process.env.ONLY) delete configs[k];
  const names = Object.keys(configs);
  const results: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
  const engines = Object.fromEntries(
    names.filter((k) => k !== 'otel-sdk').map((k) => [k, configs[k]()]),
  );
  for (const name of Object.keys(engines)) await cycle(engines[name], Math.ceil(n / 10)); // warm-up
  // Many short rounds in a shuffled order, medians: a loaded machine's noise hits every configuration alike.
  const rounds = 15;
  for (let r = 0; r < rounds; r++) {
    const order = Object.keys(engines).sort(() => Math.random() - 0.5);
    for (const name of order) results[name].push(await cycle(engines[name], n));
  }
  // The SDK replaces the global providers for every later tracer: measured last, on its own engine.
  const withSdk = configs['otel-sdk']?.();
  if (withSdk) {
    await cycle(withSdk, Math.ceil(n / 10));
    for (let r = 0; r < rounds; r++) results['otel-sdk'].push(await cycle(withSdk, n));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const ref = median(results.absent ?? results[names[0]]);
  console.log(
    `${kind}: uncontended acquire+release, ${n} cycles x ${rounds} rounds, median cycles per CPU-second of this process (vs absent)`,
  );
  for (const name of names) {
    const m = median(results[name]);
    console.log(
      `  ${name.padEnd(10)} ${Math.round(m).toString().padStart(8)}  ${(((ref - m) / ref) * 100).toFixed(1).padStart(6)} % slower`,
    );
  }
  for (const e of [...Object.values(engines), ...(withSdk ? [withSdk] : [])]) await e.close();
  await sdk?.stop();
  for (const c of clients) c.disconnect();
  await server?.destroy();
}

void main();
