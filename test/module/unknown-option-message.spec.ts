import { validateEngineOptions } from '../../lib/core/keys/engine-options';
import { MemoryLockBackend } from '../../lib/backends/memory/memory.backend';

/**
 * The unknown-option message of the module options names every option a user may write. Before,
 * it left out errorMapping and exposeErrorDetails, and suggested neither for a misspelling.
 */
describe('module options: unknown-option message', () => {
  const backend = new MemoryLockBackend();
  const message = (options: object) => {
    try {
      validateEngineOptions({ backend, ...options } as never);
    } catch (error) {
      return (error as Error).message;
    }
    return 'accepted';
  };

  it('lists errorMapping and exposeErrorDetails, and suggests them for a misspelling', () => {
    expect(message({ errorMaping: {} })).toContain('did you mean "errorMapping"?');
    expect(message({ exposeErrorDetail: true })).toContain('did you mean "exposeErrorDetails"?');
    const text = message({ nope: 1 });
    for (const name of ['errorMapping', 'exposeErrorDetails', 'httpErrors', 'checkOnStartup'])
      expect(text).toContain(name);
  });
});
