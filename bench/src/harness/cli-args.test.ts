import { describe, expect, it } from 'vitest';
import { parseCliArgs, selectKnown } from './cli-args.js';

describe('parseCliArgs', () => {
  it('reads the benchmark name and every option', () => {
    expect(
      parseCliArgs(['seed-leveldb', '--records', '1e6', '--runs', '5', '--json', 'out.json', '--systems', 'map, lmdb']),
    ).toEqual({
      help: false,
      benchmark: 'seed-leveldb',
      records: 1_000_000,
      runs: 5,
      json: 'out.json',
      systems: ['map', 'lmdb'],
    });
  });

  it('defaults to three runs', () => {
    expect(parseCliArgs(['x']).runs).toBe(3);
  });

  it('rejects bad numbers, unknown flags and two names', () => {
    expect(() => parseCliArgs(['x', '--records', '0'])).toThrow(/positive integer/);
    expect(() => parseCliArgs(['x', '--runs', '2.5'])).toThrow(/positive integer/);
    expect(() => parseCliArgs(['x', '--nope'])).toThrow();
    expect(() => parseCliArgs(['x', 'y'])).toThrow(/one benchmark/);
  });
});

describe('selectKnown', () => {
  it('keeps the known order and rejects unknown names', () => {
    expect(selectKnown('systems', ['b', 'a'], ['a', 'b', 'c'])).toEqual(['a', 'b']);
    expect(selectKnown('systems', undefined, ['a', 'b'])).toEqual(['a', 'b']);
    expect(() => selectKnown('systems', ['z'], ['a'])).toThrow(/unknown systems: z/);
  });
});
