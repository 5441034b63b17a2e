import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AppModule } from '../app.module';
import { HomeController } from './home.controller';

/** What `npm run demo` boots: the sample app plus its home page. */
@Module({
  imports: [AppModule, DiscoveryModule],
  controllers: [HomeController],
})
export class DemoModule {}
