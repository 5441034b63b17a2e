import { BadRequestException, Controller, Get, Param, ParseIntPipe, Post } from '@nestjs/common';
import { CurrentLock, LockHandle, Locked } from '../../lib';

/**
 * Transfers between two accounts under a multi-key lock: both accounts or neither, taken in one
 * canonical order, so a transfer a→b and one b→a at the same moment cannot deadlock. The balances
 * are updated with a read, a pause and a write (as a database round trip would): without the
 * lock, concurrent transfers would lose updates.
 */
@Controller('accounts')
export class AccountsController {
  private readonly balances = new Map<number, number>([
    [1, 1_000],
    [2, 1_000],
    [3, 1_000],
  ]);

  @Get()
  all() {
    return Object.fromEntries(this.balances);
  }

  @Post(':from/transfer/:to/:amount')
  @Locked(['account:<from>', 'account:<to>'], { wait: 5_000 })
  async transfer(
    @Param('from', ParseIntPipe) from: number,
    @Param('to', ParseIntPipe) to: number,
    @Param('amount', ParseIntPipe) amount: number,
    @CurrentLock() lock?: LockHandle,
  ) {
    if (from === to || !this.balances.has(from) || !this.balances.has(to) || amount <= 0) {
      throw new BadRequestException('two different known accounts and a positive amount');
    }
    const a = this.balances.get(from) ?? 0;
    const b = this.balances.get(to) ?? 0;
    await new Promise((r) => setTimeout(r, 5));
    if (a < amount) throw new BadRequestException('insufficient funds');
    this.balances.set(from, a - amount);
    this.balances.set(to, b + amount);
    return {
      from,
      to,
      amount,
      tokens: Object.fromEntries(
        [...(lock?.fencingTokens ?? new Map())].map(([k, t]) => [k, String(t)]),
      ),
    };
  }
}
