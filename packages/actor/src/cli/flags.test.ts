import { describe, expect, it } from 'vitest';
import { type FlagGroup, groupsUsage, parseFlags } from './flags.js';

const GROUP = {
  title: 'Options:',
  column: 10,
  flags: {
    n: { type: 'integer', min: 1, max: 9, default: 5, arg: 'N', help: ['a number'] },
    big: { type: 'integer', arg: 'N', help: ['any size'] },
    name: { type: 'string', env: 'NAME', arg: 'S', help: ['a name'] },
    mode: { type: 'string', choices: ['a', 'b'], help: ['a or b'] },
    'a-very-long-flag': { type: 'strings', arg: 'VALUE', help: ['first line', 'second line'] },
    fits: { type: 'boolean', help: ['two spaces'] },
    quiet: { type: 'boolean', short: 'q' },
  },
  note: '  (a note)',
} as const satisfies FlagGroup;

describe('parseFlags', () => {
  it('converts each value, gives defaults and the environment to absent flags, and says which were given', () => {
    const parsed = parseFlags(GROUP.flags, ['x', '--n', '7', '-q', '--a-very-long-flag', 'a', '--a-very-long-flag=b'], {
      NAME: 'env',
    });
    expect(parsed.positionals).toEqual(['x']);
    expect([...parsed.given].sort()).toEqual(['a-very-long-flag', 'n', 'quiet']);
    expect(parsed.values()).toEqual({
      n: 7,
      big: undefined,
      name: 'env',
      mode: undefined,
      'a-very-long-flag': ['a', 'b'],
      fits: false,
      quiet: true,
    });
    expect(parseFlags(GROUP.flags, ['--name', 'argv'], { NAME: 'env' }).values()).toMatchObject({ n: 5, name: 'argv' });
  });

  const refusals: [string[], string][] = [
    [['--n', '0'], '--n must be an integer from 1 to 9, got 0'],
    [['--n', '1.5'], '--n must be an integer from 1 to 9, got 1.5'],
    [['--big', '9007199254740992'], '--big must be an integer >= 0, got 9007199254740992'],
    [['--mode', 'c'], '--mode must be one of a, b, got c'],
  ];
  for (const [argv, message] of refusals) {
    it(`refuses ${argv.join(' ')} when the values are asked for, naming the flag`, () => {
      const parsed = parseFlags(GROUP.flags, argv);
      expect(() => parsed.values()).toThrow(expect.objectContaining({ code: 'HEAPLESS_ERR_ACTOR_USAGE', message }));
    });
  }

  it('refuses an unknown flag and a flag without its value at once', () => {
    expect(() => parseFlags(GROUP.flags, ['--nope'])).toThrow(
      expect.objectContaining({
        code: 'HEAPLESS_ERR_ACTOR_USAGE',
        message: expect.stringContaining("Unknown option '--nope'"),
      }),
    );
    expect(() => parseFlags(GROUP.flags, ['--n'])).toThrow(
      expect.objectContaining({ code: 'HEAPLESS_ERR_ACTOR_USAGE' }),
    );
  });
});

describe('groupsUsage', () => {
  it('lines the help up at the column; a longer flag stands on its own line; a flag without help is not listed', () => {
    const other: FlagGroup = { title: 'More:', column: 8, flags: { sixsix: { type: 'boolean', help: ['fits'] } } };
    expect(groupsUsage([GROUP, other])).toBe(
      [
        'Options:',
        '  --n N     a number',
        '  --big N   any size',
        '  --name S  a name',
        '  --mode    a or b',
        '  --a-very-long-flag VALUE',
        '            first line',
        '            second line',
        '  --fits    two spaces',
        '  (a note)',
        '',
        'More:',
        '  --sixsix  fits',
        '',
      ].join('\n'),
    );
  });
});
