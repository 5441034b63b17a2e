import {
  Controller,
  Injectable,
  UseGuards,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Args, Field, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  MessageBody,
  SubscribeMessage,
  WebSocketGateway,
  WebSocketServer,
} from '@nestjs/websockets';
import type { Server as WsServer } from 'ws';
import { Locked } from '../../../lib';
import { Runs } from './items.fixture';

/** Counts messages that got past the guards (the next step is the @Locked wait), by payload id. */
@Injectable()
export class MessageArrivalGuard implements CanActivate {
  constructor(private readonly runs: Runs) {}
  canActivate(context: ExecutionContext): boolean {
    const type = context.getType<string>();
    const data =
      type === 'ws'
        ? context.switchToWs().getData()
        : type === 'graphql'
          ? context.getArgByIndex(1)
          : context.switchToRpc().getData();
    const id = String((data as { id?: string }).id);
    this.runs.arrived.set(id, (this.runs.arrived.get(id) ?? 0) + 1);
    return true;
  }
}

/** TCP microservice handlers. */
@Controller()
export class ItemsMessages {
  constructor(private readonly runs: Runs) {}

  @MessagePattern('item')
  @Locked('item:<data.id>', { onBusy: 'fail' })
  async item(@Payload() data: { id?: string }): Promise<{ id?: string }> {
    this.runs.ran(String(data.id));
    return { id: data.id };
  }

  @MessagePattern('item.wait')
  @UseGuards(MessageArrivalGuard)
  @Locked('item:<data.id>', { wait: 20_000 })
  async itemWait(@Payload() data: { id: string }): Promise<{ id: string }> {
    this.runs.ran(data.id);
    return { id: data.id };
  }
}

/** A platform-ws gateway. */
@WebSocketGateway()
export class ItemsGateway {
  @WebSocketServer() server!: WsServer;
  constructor(private readonly runs: Runs) {}

  @SubscribeMessage('item')
  @Locked('item:<data.id>', { onBusy: 'fail' })
  async item(
    @MessageBody() data: { id?: string },
  ): Promise<{ event: string; data: { id?: string } }> {
    this.runs.ran(String(data.id));
    return { event: 'item', data: { id: data.id } };
  }

  @SubscribeMessage('item.wait')
  @UseGuards(MessageArrivalGuard)
  @Locked('item:<data.id>', { wait: 20_000 })
  async itemWait(
    @MessageBody() data: { id: string },
  ): Promise<{ event: string; data: { id: string } }> {
    this.runs.ran(data.id);
    return { event: 'item', data: { id: data.id } };
  }
}

@ObjectType()
export class Item {
  @Field()
  id!: string;
}

/** A code-first GraphQL resolver (Apollo driver). */
@Resolver(() => Item)
export class ItemsResolver {
  constructor(private readonly runs: Runs) {}

  @Query(() => Item)
  @Locked('item:<id>', { onBusy: 'fail' })
  async item(@Args('id', { type: () => String, nullable: true }) id?: string): Promise<Item> {
    this.runs.ran(String(id));
    return { id: String(id) };
  }

  @Query(() => Item)
  @UseGuards(MessageArrivalGuard)
  @Locked('item:<id>', { wait: 20_000 })
  async itemWait(@Args('id', { type: () => String }) id: string): Promise<Item> {
    this.runs.ran(id);
    return { id };
  }
}
