import { ReleaseNotifier } from '../../backend-kit';
import { PgReleaseListener, type PgListenClientLike } from './postgres.listener';

/** Timers alive in this process now (Node's own count, whoever made them). */
const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('PgReleaseListener', () => {
  it('prepare() leaves no timer running once LISTEN is up, however long the poll delay', async () => {
    // A connection that answers LISTEN at once: only the listener's own timers are under test.
    const client: PgListenClientLike = {
      query: () => Promise.resolve(),
      on: () => client,
      removeAllListeners: () => client,
    };
    const connector = { open: () => Promise.resolve(client), close: () => Promise.resolve() };
    const listener = new PgReleaseListener(connector, 'ch', new ReleaseNotifier(), 60_000);
    const before = timers();
    await listener.prepare();
    expect(listener.listening).toBe(true);
    // The bound of prepare() (maxPollDelay) ended with the start, instead of running out 60 s later.
    expect(timers()).toBe(before);
    await listener.close();
  });
});
