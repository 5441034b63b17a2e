import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { transpile } from '../support/transpiled';

const ROOT = join(__dirname, '..', '..');

/**
 * Runs a ```ts block of a doc page as the reader would paste it: the `index`-th block after the
 * line `heading`, compiled with decorator metadata (what Nest's injection reads), its
 * 'nestjs-distributed-lock' imports bound to lib/ (a subpath `nestjs-distributed-lock/x` to lib/x).
 * Returns the block's exports.
 */
export function runDocSnippet(file: string, heading: string, index = 0): Record<string, any> {
  const md = readFileSync(join(ROOT, file), 'utf8');
  const from = md.indexOf(`\n${heading}\n`);
  if (from < 0) throw new Error(`${file}: no heading ${heading}`);
  const blocks = [...md.slice(from).matchAll(/```ts\n([\s\S]*?)```/g)];
  const code = blocks[index]?.[1];
  if (code === undefined) throw new Error(`${file}: no ts block ${index} after ${heading}`);
  const js = transpile(code);
  const module = { exports: {} as Record<string, any> };
  const load = (id: string): unknown => {
    const subpath = /^nestjs-distributed-lock(\/[\w-]+)?$/.exec(id);
    return subpath ? require(join(ROOT, 'lib', subpath[1] ?? '')) : require(id);
  };
  new Function('require', 'module', 'exports', js)(load, module, module.exports);
  return module.exports;
}
