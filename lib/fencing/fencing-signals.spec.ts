import { MemoryLockBackend } from '../backends/memory/memory.backend';
import { LockEngine } from '../core/lock-engine';
import { LiveViewState } from '../live-view/live-view.state';
import { instrumentFencing } from '../observability/fencing-telemetry';
import type { OtelApiLike } from '../observability/lock-telemetry';
import { fencingEvents, FencingEvents } from './fencing-events';
import { MemoryFenceStore } from './memory-fence.store';

describe('fencing signals: metrics and the live view see every refusal', () => {
  it('counts lock.fencing.stale by store and logs a warning', async () => {
    const added: [number, unknown][] = [];
    const meter = {
      createCounter: (name: string) => {
        expect(name).toBe('lock.fencing.stale');
        return { add: (n: number, attrs: unknown) => added.push([n, attrs]) };
      },
    };
    const api = { metrics: { getMeter: () => meter } } as unknown as OtelApiLike;
    const warnings: string[] = [];
    const events = new FencingEvents();
    const stop = instrumentFencing(
      events,
      api,
      { warn: (m: string) => warnings.push(m), log: () => undefined, error: () => undefined },
      'log',
    );
    const store = new MemoryFenceStore({ events });
    await store.advance('r', 5n);
    await store.advance('r', 4n);
    await store.advance('r', 6n);
    await store.advance('r', { token: 6n, grant: 'other-grant' });
    stop();
    await store.advance('r', 1n);
    expect(added).toEqual([
      [1, { 'fencing.store': 'memory' }],
      [1, { 'fencing.store': 'memory' }],
    ]);
    expect(warnings).toEqual([
      'fenced write to "r" refused (memory): token 4 < highest 5',
      'fenced write to "r" refused (memory): token 6 was already written by another grant',
    ]);
  });

  it("shows a refusal in the live view's recent events (tokens as strings)", async () => {
    const engine = new LockEngine({ backend: new MemoryLockBackend() });
    // The page lists the refusals of the FencingEvents it is given (its app's stores').
    const events = new FencingEvents();
    const state = new LiveViewState(engine, events);
    try {
      const store = new MemoryFenceStore({ events });
      store.write('acct:1', 9n, () => 'ok');
      expect(store.write('acct:1', 8n, () => 'late').accepted).toBe(false);
      expect(state.snapshot().recent[0]).toMatchObject({
        type: 'fencing.stale',
        store: 'memory',
        resource: 'acct:1',
        token: '8',
        highest: '9',
      });
    } finally {
      state.onModuleDestroy();
      await engine.close();
    }
    expect(fencingEvents).toBeInstanceOf(FencingEvents);
  });
});
