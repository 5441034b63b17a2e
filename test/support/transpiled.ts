import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';

/**
 * Child processes must start cheaply: a ts-node child compiles the package on every start (about 5
 * s on 2 cores), and the torture nemesis kills and restarts 8 workers, the CLI spec runs the command
 * 45 times, the fault specs fork holders. So lib/, test/ and sample-app/ (specs aside) are
 * transpiled once (TypeScript's transpileModule, the same isolated-modules emit ts-jest and ts-node
 * --transpile-only use) into a temp dir keyed by the sources' content, and children run as plain
 * `node` on the JavaScript, with NODE_PATH pointing at the project's node_modules.
 */
export const ROOT = join(__dirname, '../..');
const SOURCES = ['lib', 'test', 'sample-app'];

function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== 'node_modules') walk(path);
      } else if (name.endsWith('.ts') && !name.endsWith('.spec.ts') && !name.endsWith('.d.ts'))
        out.push(path);
    }
  };
  for (const s of SOURCES) walk(join(ROOT, s));
  return out.sort();
}

/** Returns the root of the JavaScript build (same layout as the repository). */
export function transpiled(): string {
  const files = sources();
  const hash = createHash('sha256');
  const texts = files.map((f) => readFileSync(f, 'utf8'));
  files.forEach((f, i) =>
    hash.update(relative(ROOT, f)).update('\0').update(texts[i]).update('\0'),
  );
  const out = join(tmpdir(), `ndl-build-${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(join(out, '.complete'))) return out;
  const staging = `${out}.${process.pid}`;
  files.forEach((file, i) => {
    const outputText = transpile(texts[i], file);
    const target = join(staging, relative(ROOT, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  });
  writeFileSync(join(staging, '.complete'), new Date().toISOString());
  try {
    renameSync(staging, out);
  } catch {
    // Another run built the same sources first; theirs is identical.
  }
  pruneOldBuilds(out);
  return out;
}

/** One module's TypeScript as CommonJS JavaScript, with this repository's compiler options. */
export function transpile(text: string, fileName?: string): string {
  // Loaded only when used: typescript is a dev dependency of the harness, not of workers.
  const ts = require('typescript') as typeof import('typescript');
  return ts.transpileModule(text, {
    fileName,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      esModuleInterop: true,
      isolatedModules: true,
    },
  }).outputText;
}

/** Builds of other source versions, untouched for a day, are no longer used by any run. */
function pruneOldBuilds(keep: string): void {
  const dayAgo = Date.now() - 24 * 3600 * 1000;
  for (const name of readdirSync(tmpdir())) {
    const path = join(tmpdir(), name);
    if (!name.startsWith('ndl-build-') || path === keep) continue;
    try {
      if (statSync(path).mtimeMs < dayAgo) rmSync(path, { recursive: true, force: true });
    } catch {
      // Removed by a concurrent run.
    }
  }
}

/** Environment for `node` on the build: resolve packages from the project's node_modules. */
export function transpiledEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...env, NODE_PATH: join(ROOT, 'node_modules') };
}

/** The build's JavaScript for `script`, a .ts file of the repository (transpiled first if needed). */
export function transpiledScript(script: string): string {
  return join(transpiled(), relative(ROOT, script)).replace(/\.ts$/, '.js');
}
