import { BadRequestException, Injectable, type PipeTransform } from '@nestjs/common';

/**
 * One sku, one spelling: `SKU-9` and `sku-9` are the same item, so they must be the same lock key.
 * A key is built from the value as received; canonicalise it (or reject it) before @Locked sees it.
 */
@Injectable()
export class ParseSkuPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    const sku = typeof value === 'string' ? value.toLowerCase() : '';
    if (!/^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(sku) || sku.length > 64) {
      throw new BadRequestException(
        'sku must be letters and digits in dash-separated groups (at most 64 characters)',
      );
    }
    return sku;
  }
}
