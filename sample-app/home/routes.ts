import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import type { DiscoveryService, MetadataScanner } from '@nestjs/core';

export interface DemoRoute {
  method: string;
  path: string;
}

const join = (...parts: Array<string | undefined>): string =>
  `/${parts
    .flatMap((p) => (p ?? '').split('/'))
    .filter(Boolean)
    .join('/')}`;

/** Every HTTP route of the running app, read from Nest's own route metadata (so the page never lists a stale route). */
export function listRoutes(discovery: DiscoveryService, scanner: MetadataScanner): DemoRoute[] {
  const routes: DemoRoute[] = [];
  for (const wrapper of discovery.getControllers()) {
    const { metatype, instance } = wrapper;
    if (!metatype || !instance) continue;
    const base = Reflect.getMetadata(PATH_METADATA, metatype) as string | undefined;
    const proto = Object.getPrototypeOf(instance) as Record<string, unknown>;
    for (const name of scanner.getAllMethodNames(proto)) {
      const handler = proto[name] as object;
      const path = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
      if (path === undefined || method === undefined) continue;
      routes.push({ method: RequestMethod[method], path: join(base, path) });
    }
  }
  return routes.sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method));
}
