import 'reflect-metadata';
import { Controller, Param, Post } from '@nestjs/common';
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
/** The message `define` throws, whole. */
const messageOf = (define: () => unknown): string => {
  try {
    define();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a throw');
};

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

  it('says the names look minified only when they are one letter each, with the exact fix', () => {
    const define = () => {
      class OrdersService {
        @Locked('order:<orderId>')
        async pay(e: string, t: number) {
          return [e, t];
        }
      }
      return OrdersService;
    };
    expect(messageOf(define)).toBe(
      'Invalid lock option "key": got "order:<orderId>"; allowed: <orderId> must name a parameter of ' +
        'OrdersService.pay(), whose parameters are: e (0), t (1); these parameter names look minified ' +
        '(a bundler renamed them, and templates read names from the source): name the value explicitly ' +
        "with @KeyParam('orderId') on its parameter, or use a positional placeholder such as <0>",
    );
  });

  it("a route's @Param('id') id under order:<orderId> is a name mismatch, not minification", () => {
    const define = () => {
      @Controller('orders')
      class OrdersController {
        @Post(':id/pay')
        @Locked('order:<orderId>')
        async pay(@Param('id') id: string) {
          return id;
        }
      }
      return OrdersController;
    };
    expect(messageOf(define)).toBe(
      'Invalid lock option "key": got "order:<orderId>"; allowed: <orderId> must name a parameter of ' +
        "OrdersController.pay(), whose parameters are: id (0); placeholders read the method's parameter " +
        "names: use <id> in the template, name the parameter with @KeyParam('orderId'), or pass a key " +
        'function of the arguments',
    );
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
