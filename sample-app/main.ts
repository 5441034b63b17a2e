import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DemoModule } from './home/demo.module';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(DemoModule);
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, '127.0.0.1');
  const url = `http://127.0.0.1:${port}`;
  Logger.log(
    `sample app on ${url} (open it for the routes and how to see a 409)
  curl -X POST ${url}/orders/42/pay -H 'content-type: application/json' -d '{"amount": 25}'
  curl ${url}/orders/42
  curl ${url}/inventory/sku-1
  curl -X PUT ${url}/inventory/sku-1 -H 'content-type: application/json' -d '{"delta": -1}'
  curl -X POST ${url}/jobs/report/3`,
    'Demo',
  );
}

void bootstrap();
