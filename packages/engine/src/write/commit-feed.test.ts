import { describe, expect, it } from 'vitest';
import { CommitFeed, type CommitFollower } from './commit-feed.js';
import { WriteBatch } from './write-batch.js';

const dec = new TextDecoder();

/** Records a batch putting `key` = `value` (undefined: a delete) at `seq` into `feed`. */
function commit(feed: CommitFeed, seq: number, key: string, value?: string): void {
  const b = new WriteBatch();
  if (value === undefined) b.del(key);
  else b.put(key, value);
  b.seal(seq);
  feed.record(b.rep, b.length, seq, b.count);
}

/** What `follower` reads now, as `sequence key=value` lines. */
function readAll(follower: CommitFollower): { ok: boolean; seen: string[] } {
  const seen: string[] = [];
  const ok = follower.read((seq, key, value) => {
    seen.push(`${seq} ${dec.decode(key)}=${value === undefined ? '-' : dec.decode(value)}`);
  });
  return { ok, seen };
}

describe('CommitFeed', () => {
  it('wakes its followers once per turn, after the commits, and each reads what it has not seen', async () => {
    const feed = new CommitFeed();
    let wakes = 0;
    const a = feed.follow(10, () => wakes++, 'test');
    commit(feed, 11, 'x', '1');
    commit(feed, 12, 'y');
    expect(wakes).toBe(0);
    await Promise.resolve();
    expect(wakes).toBe(1);
    expect(readAll(a)).toEqual({ ok: true, seen: ['11 x=1', '12 y=-'] });
    expect(a.position).toBe(12);
    const b = feed.follow(12, () => wakes++, 'test');
    commit(feed, 13, 'z', '3');
    await Promise.resolve();
    expect(wakes).toBe(3);
    expect(readAll(a)).toEqual({ ok: true, seen: ['13 z=3'] });
    expect(readAll(a)).toEqual({ ok: true, seen: [] });
    expect(readAll(b)).toEqual({ ok: true, seen: ['13 z=3'] });
    a.close();
    b.close();
    expect(feed.following).toBe(false);
  });

  it('keeps at most its bound in memory: a follower behind it is told to read the WALs, then reads on', () => {
    const feed = new CommitFeed(256 * 1024);
    const f = feed.follow(0, () => {}, 'test');
    const value = 'v'.repeat(1000);
    for (let seq = 1; seq <= 1000; seq++) commit(feed, seq, `k${seq}`, value);
    expect(readAll(f)).toEqual({ ok: false, seen: [] });
    expect(f.position).toBe(0);
    // What the WALs gave back, up to where the buffer begins again.
    f.skipTo(900);
    const { ok, seen } = readAll(f);
    expect(ok).toBe(true);
    expect(seen.map((s) => Number(s.split(' ')[0]))).toEqual(Array.from({ length: 100 }, (_, i) => 901 + i));
    f.skipTo(5); // never back
    expect(f.position).toBe(1000);
  });

  it('counts a write whose visitor throws as read, and goes on from the next one', () => {
    const feed = new CommitFeed();
    const f = feed.follow(0, () => {}, 'test');
    commit(feed, 1, 'a', '1');
    commit(feed, 2, 'b', '2');
    expect(() =>
      f.read(() => {
        throw new Error('visitor broke');
      }),
    ).toThrow(/visitor broke/);
    expect(f.position).toBe(1);
    expect(readAll(f)).toEqual({ ok: true, seen: ['2 b=2'] });
  });

  it('refuses followers once closed; those it had read nothing more', () => {
    const feed = new CommitFeed();
    const f = feed.follow(0, () => {}, 'test');
    commit(feed, 1, 'a', '1');
    feed.close();
    expect(readAll(f)).toEqual({ ok: true, seen: [] });
    expect(() => feed.follow(1, () => {}, 'test')).toThrow(/closed/i);
  });
});
