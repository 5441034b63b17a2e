import { Body, Controller, Get, Param, Put } from '@nestjs/common';
import { Locked } from '../../lib';
import { ParseSkuPipe } from './sku.pipe';

/** Reads share a lock (many at once); a stock update takes it exclusively. Skus are canonicalised first. */
@Controller('inventory')
export class InventoryController {
  private readonly stock = new Map<string, number>([['sku-1', 10]]);

  @Get(':sku')
  @Locked('inventory:<sku>', { mode: 'shared', wait: 2_000 })
  async read(@Param('sku', ParseSkuPipe) sku: string) {
    await new Promise((r) => setTimeout(r, 20));
    return { sku, quantity: this.stock.get(sku) ?? 0 };
  }

  @Put(':sku')
  @Locked('inventory:<sku>', { mode: 'exclusive', wait: 2_000 })
  async update(@Param('sku', ParseSkuPipe) sku: string, @Body() body: { delta?: number }) {
    const current = this.stock.get(sku) ?? 0;
    await new Promise((r) => setTimeout(r, 20));
    this.stock.set(sku, current + Number(body?.delta ?? 0));
    return { sku, quantity: this.stock.get(sku) };
  }
}
