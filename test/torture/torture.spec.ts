import { cleanUp, runTorture, type TortureReport } from './torture.runner';
import { formatSummary } from './torture.summary';
import { FAULTS, type TortureOptions } from './torture.options';
import { BACKEND_NAMES, TORTURE_BACKENDS, type BackendName } from './torture.backends';

/**
 * The short CI torture: every landed backend, 8 worker processes, every fault kind at least once
 * (the nemesis always completes one round), a fixed seed, about 20 s of faults and quiet. Asserts safety at the fenced resource (no lost update, no
 * overlapping holds, no token backwards, no write after the writer's own signal) and that the run
 * did something (faults injected, writes accepted). Liveness and crashes are printed, not asserted:
 * see the "Torture harness" section of README.md for what they currently show.
 */
const landed = BACKEND_NAMES.filter((b) => TORTURE_BACKENDS[b]);

function options(backend: BackendName, mode: 'exclusive' | 'shared', seed: number): TortureOptions {
  const ttl = TORTURE_BACKENDS[backend]?.ttl?.default ?? 500;
  return {
    backend,
    workers: 8,
    durationMs: 10_000 + 2 * ttl,
    faults: [...FAULTS],
    seed,
    mode,
    ttl,
    wait: 2_000,
    signalCheck: true,
  };
}

function expectSafe(report: TortureReport): void {
  console.log(formatSummary(report));
  const r = report.result;
  expect({
    lostUpdates: r.lostUpdates,
    overlaps: r.overlaps,
    readerWriterOverlaps: r.readerWriterOverlaps,
  }).toEqual({ lostUpdates: 0, overlaps: 0, readerWriterOverlaps: 0 });
  if (report.options.signalCheck) expect(r.writesAfterLost).toBe(0);
  if (TORTURE_BACKENDS[report.options.backend]?.fencing !== 'best-effort')
    expect(r.tokensBackwards).toBe(0);
  expect(r.safe).toBe(true);
  expect(r.finalValue).toBe(r.ops.writesAccepted);
  expect(r.ops.writesAccepted).toBeGreaterThan(0);
  expect(Object.values(report.faults).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  cleanUp(report);
}

describe('torture (short, fixed seeds)', () => {
  it.each(landed)(
    '%s: exclusive, every fault, 8 workers',
    async (backend) => {
      expectSafe(await runTorture(options(backend, 'exclusive', 11)));
    },
    180_000,
  );

  it('memory: careless writers (no signal check), the fence alone keeps the store right', async () => {
    const report = await runTorture({ ...options('memory', 'exclusive', 13), signalCheck: false });
    expectSafe(report);
  }, 180_000);

  it('memory: shared mode mixing readers and writers', async () => {
    const report = await runTorture(options('memory', 'shared', 12));
    expectSafe(report);
    expect(report.result.ops.readerSections).toBeGreaterThan(0);
  }, 180_000);
});
