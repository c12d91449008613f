// The README's "Source layout" table lists the folders of src/ lowest layer first; a folder may import only from the
// folders listed above it. This checks every import of every source file against that order, so the table stays true.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const src = new URL('./', import.meta.url);
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const section = readme.slice(readme.indexOf('## Source layout'), readme.indexOf('## How it works'));
const layers = [...section.matchAll(/^\| `([a-z]+)\/`/gm)].map((m) => m[1]!);

describe('source layout', () => {
  it('lists every folder of src/ in the README', () => {
    const folders = readdirSync(src, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    expect([...layers].sort()).toEqual(folders.sort());
  });

  it('has each folder import only from the folders listed above it', () => {
    const wrong: string[] = [];
    layers.forEach((layer, rank) => {
      for (const file of readdirSync(new URL(`${layer}/`, src))) {
        if (!/\.c?ts$/.test(file) || file.includes('.test.') || file.includes('.bench.')) continue;
        const text = readFileSync(new URL(`${layer}/${file}`, src), 'utf8');
        for (const m of text.matchAll(/from '\.\.\/([a-z]+)\//g)) {
          if (layers.indexOf(m[1]!) >= rank) wrong.push(`${layer}/${file} imports ${m[1]}/`);
        }
      }
    });
    expect(wrong).toEqual([]);
  });
});
