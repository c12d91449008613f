import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ACTOR_ERROR_CODES } from './errors.js';

describe('ACTOR_ERROR_CODES', () => {
  it('documents every code in the README', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    for (const code of Object.keys(ACTOR_ERROR_CODES))
      expect(readme, code).toMatch(new RegExp(`\\|\\s*\`${code}\`\\s*\\|`));
  });
});
