import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule);
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, '127.0.0.1');
  const url = `http://127.0.0.1:${port}`;
  Logger.log(`sample app on ${url}
  curl -X POST ${url}/orders/42/pay -H 'content-type: application/json' -d '{"amount": 25}'
  curl ${url}/orders/42
  curl ${url}/inventory/sku-1
  curl -X PUT ${url}/inventory/sku-1 -H 'content-type: application/json' -d '{"delta": -1}'
  curl -X POST ${url}/jobs/report/3`, 'Demo');
}

void bootstrap();
