import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ACTOR_ERRORS, ActorError, type ActorErrorCode, ActorErrorCodes, isActorErrorCode } from './errors.js';

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
  it('names each code HEAPLESS_ERR_ACTOR_<NAME>, and ActorErrorCodes by its short name', () => {
    for (const code of codes) expect(code).toMatch(/^HEAPLESS_ERR_ACTOR_[A-Z_]+$/);
    expect(Object.values(ActorErrorCodes).sort()).toEqual([...codes].sort());
    for (const [short, code] of Object.entries(ActorErrorCodes)) expect(code).toBe(`HEAPLESS_ERR_ACTOR_${short}`);
    expect(Object.isFrozen(ActorErrorCodes)).toBe(true);
    for (const code of codes) expect(isActorErrorCode(code)).toBe(true);
    for (const other of ['HEAPLESS_ERR_USAGE', 'USAGE', 'toString', undefined])
      expect(isActorErrorCode(other)).toBe(false);
  });
  it('builds each error’s code and default message from the table', () => {
    for (const code of codes) {
      const e = new ActorError(code);
      expect(e).toMatchObject({ code, name: 'ActorError', message: ACTOR_ERRORS[code].message });
      expect(new ActorError(code, 'why').message).toBe('why');
    }
  });
});
