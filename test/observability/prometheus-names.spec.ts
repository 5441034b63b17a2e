/**
 * The Prometheus names the docs give are the ones OTel's Prometheus exporter serves. The package's
 * metrics go through the real MeterProvider and PrometheusExporter; every instrument records (on
 * the memory backend); the exporter's own request handler is scraped over HTTP; and every
 * `lock_...` name in a "Prometheus" section of README.md or docs/ must be a metric (or, where the
 * text uses it as one, a label) of that scrape. Rename an instrument, change the exporter's
 * naming or mistype the docs, and this fails naming the missing name.
 */
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { relative, resolve } from 'node:path';
import { markdownFiles } from '../../scripts/markdown-files';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { Test } from '@nestjs/testing';
import { DistributedLockModule, LockService, MemoryLockBackend } from '../../lib';
import { MemoryFenceStore } from '../../lib/fencing';
import { LOCK_METRICS, type LockEvent } from '../../lib/operations';
import { CrashableBackend } from '../conformance/conformance-tools';
import type { BackendLock } from '../../lib/interfaces/lock-backend.interface';

const root = resolve(__dirname, '../..');

/** The exporter as a reader only: the test serves its request handler on a free port. */
const exporter = new PrometheusExporter({ preventServerStart: true });
const meterProvider = new MeterProvider({ readers: [exporter] });
metrics.setGlobalMeterProvider(meterProvider);

interface Scrape {
  /** Sample names (`lock_wait_duration_bucket`) and family names from `# TYPE` lines. */
  metrics: Set<string>;
  labels: Set<string>;
}

function parseScrape(text: string): Scrape {
  const names = new Set<string>();
  const labels = new Set<string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) /.exec(line);
    if (type) names.add(type[1]);
    if (line.startsWith('#') || line.trim() === '') continue;
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s/.exec(line);
    if (!sample) continue;
    names.add(sample[1]);
    for (const m of (sample[2] ?? '').matchAll(/([a-zA-Z_]\w*)="/g)) labels.add(m[1]);
  }
  return { metrics: names, labels };
}

interface DocName {
  name: string;
  where: string;
  kind: 'metric' | 'label';
}

/**
 * Every `lock_...` name inside a section whose heading says "Prometheus" (until the next heading
 * of the same or a higher level). In PromQL, names in `by (...)`/`without (...)` or before a
 * matcher (`lock_outcome=~"..."`) are labels, and so is a name the prose calls one (label
 * `lock_key`); the rest are metrics.
 */
function documentedNames(): DocName[] {
  const out: DocName[] = [];
  for (const file of markdownFiles(root)) {
    let level = 0; // depth of the Prometheus heading we are under, 0 when outside one
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((text, i) => {
        const heading = /^(#{1,6})\s+(.*)$/.exec(text);
        if (heading) {
          const depth = heading[1].length;
          if (level > 0 && depth <= level) level = 0;
          if (level === 0 && /prometheus/i.test(heading[2])) level = depth;
          return;
        }
        if (level === 0) return;
        const where = `${relative(root, file)}:${i + 1}`;
        let rest = text.replace(
          /\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g,
          (_, inner: string) => {
            for (const m of inner.matchAll(/\block_\w+/g))
              out.push({ name: m[0], where, kind: 'label' });
            return '';
          },
        );
        rest = rest.replace(/\blabels? `(lock_\w+)`|\b(lock_\w+)\s*(?:=~|!~|!=|=)/g, (_, a, b) => {
          const name = (a ?? b) as string;
          out.push({ name, where, kind: 'label' });
          return '';
        });
        for (const m of rest.matchAll(/\block_\w+/g))
          out.push({ name: m[0], where, kind: 'metric' });
      });
  }
  return out;
}

/** A crashable backend whose next `failReleases` releases fail (then go through on a retry). */
class FlakyReleaseBackend extends CrashableBackend {
  failReleases = 0;
  override async release(lock: BackendLock): Promise<void> {
    if (this.failReleases > 0) {
      this.failReleases--;
      throw new Error('connection reset');
    }
    return super.release(lock);
  }
}

/** Resolves when `events` has seen every type in `types`. */
function seen(service: LockService, types: LockEvent['type'][]): Promise<void> {
  const missing = new Set(types);
  return new Promise((done) => {
    const sub = service.events.subscribe((e) => {
      missing.delete(e.type);
      if (missing.size === 0) {
        sub.unsubscribe();
        done();
      }
    });
  });
}

describe('Prometheus names in the docs', () => {
  let server: Server | undefined;

  afterAll(async () => {
    if (server) await new Promise((done) => server!.close(done));
    await meterProvider.shutdown();
  });

  it('every lock_... name of a Prometheus section is in a real scrape of every instrument', async () => {
    const backend = new FlakyReleaseBackend(new MemoryLockBackend());
    const moduleRef = await Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ backend, logging: false })],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const locks = app.get(LockService);

    // Granted and released (acquisitions, wait and hold durations), re-entered, and busy.
    await locks.withLock('order:1', () => locks.withLock('order:1', async () => undefined));
    const held = await locks.acquire('order:2');
    await expect(locks.tryAcquire('order:2')).resolves.toBeNull();
    // Lost after a failed renewal (losses, renew failures).
    const fragile = await locks.acquire('fragile', { ttl: 90 });
    const lostAndFailed = seen(locks, ['renewFailed', 'lost']);
    backend.crashed = true;
    await lostAndFailed;
    expect(fragile.signal.aborted).toBe(true);
    backend.crashed = false;
    // A release that failed, then went through on a background retry (release retries).
    const flaky = await locks.acquire('flaky');
    const retried = seen(locks, ['releaseRetried']);
    backend.failReleases = 1;
    await flaky.release().catch(() => undefined);
    await retried;
    // A stale fencing token refused (fencing stale).
    const fence = new MemoryFenceStore();
    fence.write('account:1', 2n, () => undefined);
    expect(fence.write('account:1', 1n, () => undefined).accepted).toBe(false);

    server = createServer((req, res) => exporter.getMetricsRequestHandler(req, res));
    await new Promise<void>((listening) => server!.listen(0, '127.0.0.1', listening));
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(response.status).toBe(200);
    const scrape = parseScrape(await response.text());
    await held.release();
    await app.close();

    // Every instrument recorded: its family (dots as underscores) is in the scrape.
    const families = Object.values(LOCK_METRICS).map((name) => name.replace(/\./g, '_'));
    const startsOne = (names: Iterable<string>) => (family: string) =>
      [...names].some((name) => name.startsWith(family));
    expect(families.filter((family) => !startsOne(scrape.metrics)(family))).toEqual([]);

    const names = documentedNames();
    const wrong = names.filter(
      (n) => !(n.kind === 'metric' ? scrape.metrics : scrape.labels).has(n.name),
    );
    expect(wrong.map((n) => `${n.where}: ${n.kind} ${n.name} is not in the scrape`)).toEqual([]);
    // The docs name a Prometheus series of every instrument, not only of some.
    const documented = names.filter((n) => n.kind === 'metric').map((n) => n.name);
    expect(families.filter((family) => !startsOne(documented)(family))).toEqual([]);
  });
});
