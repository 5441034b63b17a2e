import 'reflect-metadata';
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { Injectable, type LoggerService } from '@nestjs/common';
import { EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { Test } from '@nestjs/testing';
import {
  DistributedLockModule,
  Locked,
  LockBackendUnavailableError,
  LockService,
  MemoryLockBackend,
  type DistributedLockModuleOptions,
} from '../../lib';
import { LOCK_METRICS, type LockEvent } from '../../lib/operations';
import { CrashableBackend } from '../conformance/conformance-tools';

// Global OTel providers with in-memory exporters, set before any module initialises.
const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(spans)],
});
const contextManager = new AsyncLocalStorageContextManager().enable();
context.setGlobalContextManager(contextManager);
trace.setGlobalTracerProvider(tracerProvider);
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({
  exporter: metricExporter,
  exportIntervalMillis: 3_600_000,
});
const meterProvider = new MeterProvider({ readers: [reader] });
metrics.setGlobalMeterProvider(meterProvider);

class CapturingLogger implements LoggerService {
  readonly lines: { level: string; message: string; context?: string }[] = [];
  log(message: string, context?: string) {
    this.lines.push({ level: 'log', message, context });
  }
  error(message: string, _trace?: string, context?: string) {
    this.lines.push({ level: 'error', message, context });
  }
  warn(message: string, context?: string) {
    this.lines.push({ level: 'warn', message, context });
  }
  debug(message: string, context?: string) {
    this.lines.push({ level: 'debug', message, context });
  }
  verbose() {}
}

@Injectable()
class Orders {
  activeSpanName?: string;
  @Locked('order:<id>', { wait: 0, onBusy: 'skip' })
  async pay(id: string, gate?: Promise<void>): Promise<string> {
    this.activeSpanName = (trace.getActiveSpan() as unknown as { name?: string } | undefined)?.name;
    await gate;
    return `paid ${id}`;
  }
}

@Injectable()
class LockEventsListener {
  readonly received: LockEvent[] = [];
  @OnEvent('lock.acquired')
  onAcquired(e: LockEvent) {
    this.received.push(e);
  }
  @OnEvent('lock.skipped')
  onSkipped(e: LockEvent) {
    this.received.push(e);
  }
}

async function boot(
  options: Partial<DistributedLockModuleOptions>,
  logger = new CapturingLogger(),
) {
  const moduleRef = await Test.createTestingModule({
    imports: [
      EventEmitterModule.forRoot(),
      DistributedLockModule.forRoot({ backend: new MemoryLockBackend(), ...options }),
    ],
    providers: [Orders, LockEventsListener],
  })
    .setLogger(logger)
    .compile();
  const app = moduleRef.createNestApplication({ logger });
  await app.init();
  return {
    app,
    logger,
    service: app.get(LockService),
    orders: app.get(Orders),
    listener: app.get(LockEventsListener),
  };
}

function metric(all: ResourceMetrics[], name: string) {
  const last = all[all.length - 1];
  for (const scope of last?.scopeMetrics ?? [])
    for (const m of scope.metrics) if (m.descriptor.name === name) return m;
  return undefined;
}

describe('observability through the Nest module', () => {
  afterAll(async () => {
    await meterProvider.shutdown();
    await tracerProvider.shutdown();
    contextManager.disable();
  });

  it('logs through Nest Logger with context DistributedLock: debug grants/releases only at logging: debug', async () => {
    const { app, logger, service } = await boot({ logging: 'debug' });
    await service.withLock('invoice:7', async () => undefined);
    await service.forceRelease('invoice:7');
    await app.close();
    expect(logger.lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          level: 'debug',
          context: 'DistributedLock',
          message: expect.stringMatching(
            /^acquired "invoice:7" \(exclusive, token 1, waited \d+ ms, 1 attempt\(s\)\)$/,
          ),
        }),
        expect.objectContaining({
          level: 'debug',
          context: 'DistributedLock',
          message: expect.stringMatching(/^released "invoice:7" after \d+ ms$/),
        }),
        expect.objectContaining({
          level: 'warn',
          context: 'DistributedLock',
          message: '"invoice:7" force-released by an operator (it was free)',
        }),
      ]),
    );
  });

  it('default level writes no debug lines; logging: false writes none; a bad level fails start-up', async () => {
    const quiet = await boot({});
    await quiet.service.withLock('a', async () => undefined);
    await quiet.app.close();
    // (The one start-up warning about shutdown hooks aside: this test app does not enable them.)
    const quietLines = quiet.logger.lines.filter((l) => l.context === 'DistributedLock');
    expect(quietLines.filter((l) => !l.message.includes('shutdown hooks are off'))).toEqual([]);
    const off = await boot({ logging: false });
    await off.service.forceRelease('a');
    await off.app.close();
    expect(off.logger.lines.filter((l) => l.context === 'DistributedLock')).toEqual([]);
    await expect(boot({ logging: 'loud' as never })).rejects.toThrow(
      'Invalid lock option "logging"',
    );
  });

  it('LockService.events is an Observable of every event; event-emitter gets lock.<type>', async () => {
    const { app, service, orders, listener } = await boot({});
    const seen: string[] = [];
    const sub = service.events.subscribe((e) => seen.push(e.type));
    let open!: () => void;
    const first = orders.pay('42', new Promise<void>((r) => (open = r)));
    await expect(orders.pay('42')).resolves.toBeUndefined();
    open();
    await first;
    sub.unsubscribe();
    await service.withLock('after', async () => undefined);
    await app.close();
    expect(seen).toEqual(['acquired', 'busy', 'skipped', 'released']);
    expect(
      listener.received.map((e) => [e.type, (e as { keyTemplate?: string }).keyTemplate]),
    ).toEqual([
      ['acquired', 'order:<id>'],
      ['skipped', 'order:<id>'],
      ['acquired', undefined],
    ]);
  });

  it('OpenTelemetry: spans around acquire and the locked call (key template, not the raw key) and metrics', async () => {
    spans.reset();
    const { app, service, orders } = await boot({});
    await orders.pay('1001');
    await service.withLock('report:2024', async () => undefined);
    expect(orders.activeSpanName).toBe('lock.held');
    const finished = spans
      .getFinishedSpans()
      .map((s) => ({ name: s.name, attributes: s.attributes }));
    expect(finished).toEqual([
      {
        name: 'lock.acquire',
        attributes: {
          'lock.key': 'order:<id>',
          'lock.backend': 'default',
          'lock.backend.kind': 'memory',
          'lock.mode': 'exclusive',
          'lock.outcome': 'acquired',
        },
      },
      {
        name: 'lock.held',
        attributes: {
          'lock.key': 'order:<id>',
          'lock.backend': 'default',
          'lock.backend.kind': 'memory',
          'lock.mode': 'exclusive',
          'lock.outcome': 'ok',
        },
      },
      {
        name: 'lock.acquire',
        attributes: expect.objectContaining({ 'lock.key': 'report:*', 'lock.outcome': 'acquired' }),
      },
      { name: 'lock.held', attributes: expect.objectContaining({ 'lock.key': 'report:*' }) },
    ]);
    expect(JSON.stringify(finished)).not.toContain('1001');

    const held = await service.acquire('gauge:1');
    await reader.forceFlush();
    const all = metricExporter.getMetrics();
    const heldGauge = metric(all, LOCK_METRICS.held);
    expect(heldGauge?.dataPoints).toEqual([
      expect.objectContaining({ value: 1, attributes: { 'lock.backend': 'default' } }),
    ]);
    const acquisitions = metric(all, LOCK_METRICS.acquisitions);
    expect(acquisitions?.dataPoints).toEqual(
      // Cumulative over this file: report:* was acquired once, here.
      expect.arrayContaining([
        expect.objectContaining({
          value: 1,
          attributes: expect.objectContaining({
            'lock.key': 'report:*',
            'lock.outcome': 'acquired',
          }),
        }),
      ]),
    );
    const wait = metric(all, LOCK_METRICS.waitDuration);
    expect(wait?.descriptor.unit).toBe('ms');
    const hold = metric(all, LOCK_METRICS.holdDuration);
    expect(
      hold?.dataPoints.some(
        (p) => p.attributes['lock.key'] === 'report:*' && p.attributes['lock.end'] === 'released',
      ),
    ).toBe(true);
    expect(metric(all, LOCK_METRICS.waiters)?.dataPoints).toEqual([
      expect.objectContaining({ value: 0 }),
    ]);
    await held.release();
    await app.close();
  });

  it('OpenTelemetry: losses and renew failures are counted', async () => {
    const backend = new CrashableBackend(new MemoryLockBackend());
    const { app, service } = await boot({ backend });
    const handle = await service.acquire('fragile', { ttl: 90 });
    backend.crashed = true;
    await new Promise((resolve) =>
      handle.signal.addEventListener('abort', resolve, { once: true }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    await reader.forceFlush();
    const all = metricExporter.getMetrics();
    expect(metric(all, LOCK_METRICS.losses)?.dataPoints[0].value).toBeGreaterThanOrEqual(1);
    expect(metric(all, LOCK_METRICS.renewFailures)?.dataPoints[0].value).toBeGreaterThanOrEqual(1);
    backend.crashed = false;
    await app.close();
  });

  it("checkOnStartup: 'fail' stops start-up when a backend is down; 'warn' logs and starts", async () => {
    const down = new CrashableBackend(new MemoryLockBackend());
    down.tryAcquire = () => Promise.reject(new Error('ECONNREFUSED 127.0.0.1:1'));
    await expect(boot({ backend: down, checkOnStartup: 'fail' })).rejects.toBeInstanceOf(
      LockBackendUnavailableError,
    );
    const warned = await boot({ backend: down, checkOnStartup: 'warn' });
    await warned.app.close();
    expect(warned.logger.lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          level: 'warn',
          context: 'DistributedLock',
          message: expect.stringContaining('start-up check: backend "default" (memory) is down'),
        }),
      ]),
    );
    await expect(boot({ checkOnStartup: 'maybe' as never })).rejects.toThrow(
      'Invalid lock option "checkOnStartup"',
    );
  });
});
