import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';

/**
 * The published surface cannot drift: the package root exports at most MAX_ROOT_NAMES names,
 * runtime and type together (`export *` expanded), and every subpath of package.json `exports`
 * is a real entry with its `typesVersions` twin (node10 resolution reads only that).
 */
const MAX_ROOT_NAMES = 50;
const ROOT = join(__dirname, '..');

interface Manifest {
  exports: Record<string, string | { types: string; default: string }>;
  typesVersions: { '*': Record<string, string[]> };
}
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;

/** Subpath ('.', './fencing', ...) -> the lib/ source its built entry comes from. */
const entries = new Map(
  Object.entries(manifest.exports).flatMap(([subpath, target]) =>
    typeof target === 'string'
      ? [] // ./package.json
      : [[subpath, join(ROOT, target.types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts'))]],
  ),
);

/**
 * Every name each entry exports, as the compiler sees it. Only lib/'s own files are loaded (a
 * package import stays unresolved): the names are all declared in lib/, and this keeps the spec
 * fast.
 */
function exportedNames(files: string[]): Map<string, string[]> {
  const options: ts.CompilerOptions = { noLib: true, types: [], noEmit: true, skipLibCheck: true };
  const host = ts.createCompilerHost(options);
  host.resolveModuleNames = (names, containingFile) =>
    names.map((name) =>
      name.startsWith('.')
        ? ts.resolveModuleName(name, containingFile, options, host).resolvedModule
        : undefined,
    );
  const program = ts.createProgram(files, options, host);
  const checker = program.getTypeChecker();
  return new Map(
    files.map((file) => {
      const module = checker.getSymbolAtLocation(program.getSourceFile(file)!)!;
      return [file, checker.getExportsOfModule(module).map((s) => s.name)];
    }),
  );
}

describe('the public surface', () => {
  const names = exportedNames([...entries.values()]);

  it(`the package root exports at most ${MAX_ROOT_NAMES} names, runtime and type`, () => {
    const all = names.get(entries.get('.')!)!;
    // What a CommonJS or ES module app can import at run time; the rest are types.
    const runtime = Object.keys(require('./index') as object);
    expect(all).toEqual(expect.arrayContaining(runtime));
    const types = all.filter((name) => !runtime.includes(name));
    const listing =
      `runtime (${runtime.length}): ${[...runtime].sort().join(', ')}\n` +
      `types (${types.length}): ${[...types].sort().join(', ')}`;
    // Over the cap, the failure lists the root: move a name to a subpath rather than raise the cap.
    expect(
      all.length > MAX_ROOT_NAMES ? `${all.length} names, over ${MAX_ROOT_NAMES}:\n${listing}` : '',
    ).toBe('');
  });

  it('every subpath of `exports` is an entry in lib/ with its typesVersions twin', () => {
    const subpaths = [...entries.keys()].filter((s) => s !== '.');
    expect(subpaths.length).toBeGreaterThan(0);
    for (const subpath of subpaths) {
      const source = entries.get(subpath)!;
      expect({ subpath, exists: existsSync(source) }).toEqual({ subpath, exists: true });
      expect(names.get(source)!.length).toBeGreaterThan(0);
      const target = manifest.exports[subpath] as { types: string; default: string };
      expect(target.default).toBe(target.types.replace(/\.d\.ts$/, '.js'));
      expect(manifest.typesVersions['*'][subpath.slice(2)]).toEqual([target.types.slice(2)]);
    }
    expect(Object.keys(manifest.typesVersions['*']).sort()).toEqual(
      subpaths.map((s) => s.slice(2)).sort(),
    );
  });
});
