import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Published types never import an optional peer: a user without etcd3 or
 * node-zookeeper-client installed compiles with `skipLibCheck: false`. The `.d.ts` files are
 * emitted from these sources, so no source (not even `import type`) may name a driver module.
 */
describe('etcd and ZooKeeper backends: published types', () => {
  it.each([
    ['etcd', /from\s+['"]etcd3['"]|import\(\s*['"]etcd3['"]\s*\)|require\(\s*['"]etcd3['"]\s*\)/],
    [
      'zookeeper',
      /from\s+['"]node-zookeeper-client['"]|import\(\s*['"]node-zookeeper-client['"]\s*\)|require\(/,
    ],
  ])('lib/backends/%s imports no driver module, not even its types', (folder, driver) => {
    const dir = join(__dirname, '..', folder);
    const sources = readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'));
    expect(sources.length).toBeGreaterThan(3);
    for (const file of sources) {
      expect({ file, imports: driver.test(readFileSync(join(dir, file), 'utf8')) }).toEqual({
        file,
        imports: false,
      });
    }
  });
});
