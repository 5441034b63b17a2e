import type { TortureReport } from './torture.runner';

/** The one-screen summary of a run. */
export function formatSummary(report: TortureReport): string {
  const { options: o, result: r } = report;
  const failed =
    Object.entries(r.ops.failed)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none';
  const verdict = (n: number) => (n === 0 ? 'ok' : 'VIOLATION');
  const lines = [
    `== torture ${o.backend} (${o.mode}; ${(o.workloads ?? ['plain']).join(', ')}) seed ${o.seed}: ${o.workers} workers, ${Math.round(report.elapsedMs / 1000)} s, ttl ${o.ttl} ms, wait ${o.wait} ms`,
    `set-up            build ${report.timings.buildMs} ms, servers ${report.timings.serversMs} ms, ${o.workers} workers ${report.timings.workersMs} ms, stop ${report.timings.stopMs} ms`,
    `faults injected    ${Object.entries(report.faults)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    ...report.notes.map((n) => `note               ${n}`),
    `operations         ${r.ops.invoked} invoked, ${r.ops.granted} granted (plain ${r.ops.grantedBy.plain}, semaphore ${r.ops.grantedBy.semaphore}, multi-key ${r.ops.grantedBy.multi}), failed: ${failed}`,
    `locks lost         ${r.ops.lost} (${r.ops.lostOnArrival} within 2 ms of the grant: paused or cut off while acquiring, or a bug; writes skipped after own signal: ${r.ops.writesSkippedAfterLost})`,
    `fenced resource    ${r.ops.writesAccepted} writes accepted, ${r.ops.writesRejected} rejected, ${r.ops.readsRejected} reads rejected, final value ${r.finalValue}` +
      (o.mode === 'shared' ? `, ${r.ops.readerSections} reader sections` : ''),
    `lost updates       ${r.lostUpdates}  ${verdict(r.lostUpdates)}`,
    `overlaps           ${r.overlaps} writer/writer, ${r.readerWriterOverlaps} reader/writer  ${verdict(r.overlaps + r.readerWriterOverlaps)}`,
    `tokens backwards   ${r.tokensBackwards}  ${r.tokensBackwards === 0 ? 'ok' : o.backend === 'redlock' ? '(best-effort fencing: reported, not a violation)' : 'VIOLATION'}`,
    `semaphores         ${r.ops.semaphoreSections} sections; most holders at once: ${
      Object.entries(r.maxHolders)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none'
    }; over permits ${r.semaphoreOverflows}  ${verdict(r.semaphoreOverflows)}`,
    `writes after lost  ${r.writesAfterLost}  ${o.signalCheck ? verdict(r.writesAfterLost) : '(signal check off: expected)'}`,
    `liveness           ${r.stuckWorkers.length === 0 ? 'every worker progressed' : `stuck workers: ${r.stuckWorkers.join(', ')}`} after the heal; ${r.acceptedWritesAfterHeal} writes accepted after it  ${r.live ? 'ok' : 'VIOLATION'}`,
    `worker crashes     ${report.crashes.length}${report.crashes.length ? `  (first: worker ${report.crashes[0].slot}, exit ${report.crashes[0].exit}: ${firstError(report.crashes[0].log)})` : ''}`,
    `without fencing    ${r.unfenced.lostUpdates} of ${r.unfenced.writeAttempts} updates would have been lost (${r.unfenced.overlappingSections} overlapping sections);` +
      ` ${r.unfenced.staleWritesStoppedBySignal} more stale writes were stopped only by the holder's signal check`,
    ...r.findings.slice(0, 8).map((f) => `  ! ${f}`),
    `verdict            ${r.safe ? 'SAFE' : 'UNSAFE'}, ${r.live && report.crashes.length === 0 ? 'LIVE' : 'NOT LIVE'}; report ${o.report ?? `${report.dir}/report.json`}`,
  ];
  return lines.join('\n');
}

function firstError(log: string): string {
  return (
    log
      .split('\n')
      .find((l) => /Error|error/.test(l))
      ?.trim()
      .slice(0, 120) ?? 'see its log'
  );
}
