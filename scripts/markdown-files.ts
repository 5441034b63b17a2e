import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The Markdown a user reads: README.md and every `.md` under docs/ (absolute paths). */
export function markdownFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) return walk(p);
      return name.endsWith('.md') ? [p] : [];
    });
  const docs = join(root, 'docs');
  return [join(root, 'README.md'), ...(existsSync(docs) ? walk(docs) : [])];
}
