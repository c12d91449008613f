import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ACTOR_ERRORS, ActorError, type ActorErrorCode } from './errors.js';

/** The codes of the README's error table: the rows `| \`CODE\` | ... |` after the table's header. */
function readmeCodes(): string[] {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const table = readme.slice(readme.indexOf('| code '));
  return [...table.matchAll(/^\|\s*`([A-Z_]+)`\s*\|/gm)].map((m) => m[1]!);
}

describe('ACTOR_ERRORS', () => {
  const codes = Object.keys(ACTOR_ERRORS) as ActorErrorCode[];
  it('lists the same codes as the README’s error table, in the same order', () => {
    expect(readmeCodes()).toEqual(codes);
  });
  it('builds each error’s code and default message from the table', () => {
    for (const code of codes) {
      const e = new ActorError(code);
      expect(e).toMatchObject({ code, name: 'ActorError', message: ACTOR_ERRORS[code].message });
      expect(new ActorError(code, 'why').message).toBe('why');
    }
  });
});
