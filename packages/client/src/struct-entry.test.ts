import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** The modules `entry` loads through relative imports (type-only ones included), and every bare specifier. */
function importGraph(entry: URL): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const walk = (url: URL) => {
    if (files.has(url.href)) return;
    files.add(url.href);
    for (const m of readFileSync(url, 'utf8').matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)) {
      const spec = m[1]!;
      if (spec.startsWith('.')) walk(new URL(spec.replace(/\.js$/, '.ts'), url));
      else packages.add(spec);
    }
  };
  walk(entry);
  return { files: [...files].map((f) => f.slice(f.lastIndexOf('/') + 1)).sort(), packages: [...packages] };
}

describe('the struct entry (@heapless/client/struct)', () => {
  it('loads no package but @heapless/struct, only the struct modules and the error table', () => {
    const { files, packages } = importGraph(new URL('./struct.ts', import.meta.url));
    expect(packages).toEqual(['@heapless/struct']);
    expect(files).toEqual(['error-codes.ts', 'heapless-error.ts', 'struct-layout.ts', 'struct-view.ts', 'struct.ts']);
  });
  it('is a subpath of the package, and both main entries re-export it', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(pkg.exports['./struct']).toEqual({ types: './dist/struct.d.ts', default: './dist/struct.js' });
    const shared = readFileSync(new URL('./shared-exports.ts', import.meta.url), 'utf8');
    expect(shared).toContain("export * from './struct.js';");
  });
});
