import 'reflect-metadata';
import { compileLockKey, parseParameterNames } from '../../lib/core/keys/lock-key';
import { KeyParam } from '../../lib/decorators/key-param.decorator';
import { Locked } from '../../lib/decorators/locked.decorator';
import { LOCKED_METADATA } from '../../lib/distributed-lock.constants';
import { InvalidLockOptionsError } from '../../lib/errors/invalid-lock-options.error';
import type { LockedMethod } from '../../lib/interfaces/locked-method.interface';

/**
 * Issue 13.5: named placeholders are read from Function.prototype.toString(), which a minifying
 * bundler rewrites (`pay(orderId, amount)` becomes `pay(e, t)`). The classes below are what a
 * minifier leaves: the same methods with their parameters renamed.
 */
const compiled = (cls: Function, method: string) =>
  (Reflect.getMetadata(LOCKED_METADATA, cls.prototype[method]) as LockedMethod).key;

describe('named placeholders under minification (issue 13.5)', () => {
  it('fails at start-up when the parameter names look minified, naming @KeyParam and <0> as the fix', () => {
    const define = () => {
      class OrdersService {
        @Locked('order:<orderId>')
        async pay(e: string, t: number) {
          return [e, t];
        }
      }
      return OrdersService;
    };
    expect(define).toThrow(InvalidLockOptionsError);
    expect(define).toThrow(/look minified/);
    expect(define).toThrow(/@KeyParam\('orderId'\)/);
    expect(define).toThrow(/<0>/);
  });

  it('@KeyParam names the value explicitly, so the template survives renamed parameters', () => {
    class Original {
      @Locked('order:<orderId>:<dto.line>')
      async pay(orderId: string, dto: { line: number }) {
        return [orderId, dto];
      }
    }
    class Minified {
      @Locked('order:<orderId>:<dto.line>')
      async pay(@KeyParam('orderId') e: string, @KeyParam('dto') t: { line: number }) {
        return [e, t];
      }
    }
    const args = ['42', { line: 3 }];
    expect(compiled(Minified, 'pay').resolve(args)).toBe('order:42:3');
    expect(compiled(Minified, 'pay').resolve(args)).toBe(compiled(Original, 'pay').resolve(args));
  });

  it('positional placeholders need no names at all', () => {
    class Minified {
      @Locked('order:<0>:<1.line>')
      async pay(e: string, t: { line: number }) {
        return [e, t];
      }
    }
    expect(compiled(Minified, 'pay').resolve(['42', { line: 3 }])).toBe('order:42:3');
  });

  it('@KeyParam rejects a bad name, and an unknown placeholder still fails naming the parameters', () => {
    expect(() => KeyParam('not a name')).toThrow(InvalidLockOptionsError);
    expect(() => compileLockKey('o:<nope>', ['id', 'dto'], 'T.m()')).toThrow(
      /must name a parameter/,
    );
    expect(
      parseParameterNames(function (e: string, t: number) {
        return [e, t];
      }),
    ).toEqual(['e', 't']);
  });
});
