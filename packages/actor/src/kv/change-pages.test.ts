import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChangeList, type DecodedChange, readChange } from './change-list.js';
import { ChangePages, PAGE_BYTES, type Segment } from './change-pages.js';

/** The changes of `segments`, read back from their bytes: [sequence, key, value hex | null]. */
function read(segments: readonly Segment[]): [number, string, string | null][] {
  const out: [number, string, string | null][] = [];
  const c: DecodedChange = { sequence: 0, key: new Uint8Array(0), value: null, end: 0 };
  for (const s of segments) {
    let at = s.list.startOf(s.at);
    for (let i = s.at; i < s.to; i++) {
      readChange(s.list.bytes, at, c);
      expect(c.end).toBe(s.list.ends[i]);
      at = c.end;
      out.push([
        c.sequence,
        Buffer.from(c.key).toString(),
        c.value === null ? null : Buffer.from(c.value).toString('hex'),
      ]);
    }
  }
  return out;
}

describe('ChangePages', () => {
  it('holds the changes under a prefix in pages whose bytes never move or change, bounded by what they allocate', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.array(fc.tuple(fc.constantFrom('a', 'ab', 'b', 'abc'), fc.option(fc.nat({ max: 40_000 }))), {
            maxLength: 40,
          }),
          { maxLength: 30 },
        ),
        fc.constantFrom('', 'a', 'ab', 'b'),
        (rounds, prefix) => {
          const pages = new ChangePages();
          const p = Buffer.from(prefix);
          let seq = 0;
          const kept: { segments: Segment[]; want: [number, string, string | null][]; snapshot: Buffer[] }[] = [];
          for (const round of rounds) {
            const log = new ChangeList();
            const want: [number, string, string | null][] = [];
            for (const [k, n] of round) {
              const key = `${k}:${++seq}`;
              const value = n === null ? undefined : Buffer.alloc(n, seq & 0xff);
              log.append(seq, Buffer.from(key), value);
              if (key.startsWith(prefix)) want.push([seq, key, value === undefined ? null : value.toString('hex')]);
            }
            const segments: Segment[] = [];
            pages.append(log, 0, log.count, p, segments);
            expect(read(segments)).toEqual(want);
            // Views taken now must read the same after later rounds are appended.
            kept.push({
              segments,
              want,
              snapshot: segments.map((s) =>
                Buffer.from(s.list.bytes.subarray(s.list.startOf(s.at), s.list.ends[s.to - 1])),
              ),
            });
            for (const k of kept) {
              expect(read(k.segments)).toEqual(k.want);
              k.segments.forEach((s, i) => {
                expect(
                  Buffer.compare(s.list.bytes.subarray(s.list.startOf(s.at), s.list.ends[s.to - 1]), k.snapshot[i]!),
                ).toBe(0);
              });
            }
            for (const page of pages.pages) expect(page.bytes.length).toBeGreaterThanOrEqual(PAGE_BYTES);
            expect(pages.allocated).toBe(pages.pages.reduce((n, page) => n + page.allocated, 0));
          }
          pages.trim(0);
          expect(pages.pages.length).toBeLessThanOrEqual(1);
          expect(pages.allocated).toBe(pages.pages[0]?.allocated ?? 0);
        },
      ),
      { numRuns: 30 },
    );
  });

  it('lets go of the oldest pages beyond a bound, and says the last sequence let go', () => {
    const pages = new ChangePages();
    const log = new ChangeList();
    for (let i = 1; i <= 100; i++) log.append(i, Buffer.from(`k${i}`), Buffer.alloc(10_000));
    pages.append(log, 0, log.count, new Uint8Array(0), []);
    const before = pages.pages.length;
    expect(before).toBeGreaterThan(10);
    const dropped = pages.trim(4 * PAGE_BYTES);
    expect(pages.allocated).toBeLessThanOrEqual(4 * PAGE_BYTES);
    expect(dropped).toBe(pages.pages[0]!.sequences[0]! - 1);
  });
});
