import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** Every module the browser entry loads, following relative imports, and the packages it imports. */
function importGraph(entry: URL): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const walk = (url: URL) => {
    if (files.has(url.href)) return;
    files.add(url.href);
    const src = readFileSync(url, 'utf8');
    for (const m of src.matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)) {
      const spec = m[1];
      if (spec.startsWith('.')) walk(new URL(spec.replace(/\.js$/, '.ts'), url));
      else if (!/^import\s+type\s/.test(m[0]) && !/^export\s+type\s/.test(m[0])) packages.add(spec);
    }
  };
  walk(entry);
  return { files, packages };
}

describe('the browser entry', () => {
  it('loads no Node module and no ws, only msgpackr and @heapless/struct', () => {
    const { files, packages } = importGraph(new URL('./browser.ts', import.meta.url));
    expect(files.size).toBeGreaterThan(5);
    expect([...packages].sort()).toEqual(['@heapless/struct', 'msgpackr']);
  });
  it('is what the package exports for browsers and by default', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(pkg.exports['.'].default).toBe('./dist/browser.js');
    expect(pkg.exports['.'].node.default).toBe('./dist/node.js');
  });
});
