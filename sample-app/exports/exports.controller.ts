import { Controller, Param, Post } from '@nestjs/common';
import { Locked } from '../../lib';

/**
 * A rate-limited export: a semaphore lets at most 3 exports run at once across the fleet; a
 * fourth caller gets 409 with Retry-After at once (onBusy: 'fail') instead of piling up.
 */
@Controller('exports')
export class ExportsController {
  running = 0;
  most = 0;

  @Post(':name')
  @Locked('exports', { permits: 3, onBusy: 'fail', ttl: 10_000 })
  async run(@Param('name') name: string) {
    this.most = Math.max(this.most, ++this.running);
    try {
      await new Promise((r) => setTimeout(r, 300)); // the export itself
      return { name, exported: true };
    } finally {
      this.running--;
    }
  }
}
