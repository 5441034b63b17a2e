/**
 * One campaigner for the multi-process election test. argv: backend name (a torture registry
 * entry), its client config as JSON, ttl. Reports over IPC: { type: 'leader', token } on every
 * win, { type: 'follower' } on every loss, and answers { type: 'status' } with
 * { type: 'status', leader } (read synchronously: a paused or partitioned leader whose validity
 * has ended answers false).
 */
import { LockEngine } from '../../lib/core/lock-engine';
import { TORTURE_BACKENDS, type BackendName } from '../torture/torture.backends';

const [name, configJson, ttl] = process.argv.slice(2);

async function main(): Promise<void> {
  const { backend } = await TORTURE_BACKENDS[name as BackendName]!.connect(
    JSON.parse(configJson),
    Number(ttl),
  );
  const engine = new LockEngine({
    backend,
    keyPrefix: 'election-test:',
    defaults: { ttl: Number(ttl) },
  });
  const leadership = engine.leadership('fleet');
  leadership.onChange((leader, term) =>
    process.send?.(
      leader ? { type: 'leader', token: String(term?.fencingToken) } : { type: 'follower' },
    ),
  );
  process.on('message', (m: { type: string }) => {
    if (m.type === 'status') process.send?.({ type: 'status', leader: leadership.isLeader });
  });
  process.send?.({ type: 'ready' });
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});
