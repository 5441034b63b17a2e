import { MemoryLockBackend } from '../backends/memory/memory.backend';
import { LockEngine } from '../core/lock-engine';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { holderData, holderMetadata, MAX_HOLDER_DATA } from './holder-data';

describe('holder data', () => {
  const holder = Object.freeze({ host: 'web-1', pid: 4242, instance: 'orders-api' });

  it('is compact JSON, made once per identity, and read back as metadata', () => {
    const text = holderData(holder);
    expect(text).toBe('{"host":"web-1","pid":4242,"instance":"orders-api"}');
    expect(holderData(holder)).toBe(text);
    expect(holderMetadata(text)).toEqual({ host: 'web-1', pid: '4242', instance: 'orders-api' });
    expect(holderMetadata(Buffer.from(text))).toEqual(holderMetadata(text));
    expect(holderData(undefined)).toBe('');
  });

  it("reads another client's data as `data` and nothing as undefined", () => {
    // Curator stores the client's IP address in a lock node, kazoo an identifier.
    expect(holderMetadata('10.0.0.7')).toEqual({ data: '10.0.0.7' });
    expect(holderMetadata('{"host":1}')).toEqual({ data: '{"host":1}' });
    expect(holderMetadata('')).toBeUndefined();
    expect(holderMetadata(null)).toBeUndefined();
  });

  it('stays within MAX_HOLDER_DATA characters', () => {
    const long = { host: 'h'.repeat(200), pid: 1, instance: 'i'.repeat(128) };
    expect(holderData(long).length).toBeLessThanOrEqual(MAX_HOLDER_DATA);
  });
});

describe('the instance option', () => {
  const backend = new MemoryLockBackend();

  it('names the engine as the holder of its grants (default host:pid)', () => {
    expect(new LockEngine({ backend, instance: 'orders-api' }).holder.instance).toBe('orders-api');
    const { host, pid, instance } = new LockEngine({ backend }).holder;
    expect(instance).toBe(`${host}:${pid}`);
  });

  it.each([[''], ['x'.repeat(129)], ['a\nb'], [42]])('refuses %j', (instance) => {
    expect(() => new LockEngine({ backend, instance: instance as string })).toThrow(
      InvalidLockOptionsError,
    );
    expect(() => new LockEngine({ backend, instance: instance as string })).toThrow(/"instance"/);
  });
});
