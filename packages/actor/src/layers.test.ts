import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** The folders of src/, in order: each may import only from itself and the folders before it (README, "layers"). */
const LAYERS = ['runtime', 'server', 'kv', 'cli'] as const;

describe('the source layers', () => {
  it('import only downward: runtime <- server <- kv <- cli', () => {
    const upward: string[] = [];
    for (const [rank, layer] of LAYERS.entries()) {
      const dir = new URL(`./${layer}/`, import.meta.url);
      for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
        const src = readFileSync(new URL(file, dir), 'utf8');
        for (const m of src.matchAll(/from '\.\.\/([a-z]+)\//g)) {
          const target = LAYERS.indexOf(m[1] as (typeof LAYERS)[number]);
          if (target === -1 || target > rank) upward.push(`${layer}/${file} imports ${m[1]}/`);
        }
      }
    }
    expect(upward).toEqual([]);
  });
});
