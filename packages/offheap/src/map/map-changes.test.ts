import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RECENT_COMMIT_BYTES } from '@heapless/engine';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapMap } from './offheap-map.js';

const root = mkdtempSync(join(tmpdir(), 'map-changes-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `d${dirs++}`);
const dec = new TextDecoder();
const text = (seq: number, key: Uint8Array, value: Uint8Array | undefined) =>
  `${seq} ${dec.decode(key)} ${value === undefined ? '-' : Buffer.from(value).toString('hex')}`;

describe('map.changes', () => {
  it('is undefined for a memory-only map', async () => {
    const m = new OffHeapMap<string, unknown>({ threads: 1 });
    expect(m.changes).toBeUndefined();
    await m.close();
  });

  it('tells a write after the write call, never inside it, once per turn of writes', async () => {
    const m = await OffHeapMap.open<string, unknown>({ dir: freshDir(), threads: 1 });
    const live: string[] = [];
    let inWrite = false;
    const off = m.changes!.subscribe((_seq, key) => {
      expect(inWrite).toBe(false);
      live.push(dec.decode(key));
    });
    inWrite = true;
    m.setBytes('a', Uint8Array.of(1));
    m.setBytes('b', Uint8Array.of(2));
    inWrite = false;
    expect(live).toEqual([]);
    await Promise.resolve();
    expect(live).toEqual(['a', 'b']);
    off();
    await m.close();
  });

  it('tells a turn of writes larger than the memory kept for it from the WAL, without a gap or a repeat', async () => {
    const m = await OffHeapMap.open<string, unknown>({ dir: freshDir(), threads: 1 });
    const feed = m.changes!;
    const start = feed.lastSequence;
    const seqs: number[] = [];
    const off = feed.subscribe((seq) => seqs.push(seq));
    const value = new Uint8Array(1000);
    const n = Math.ceil((RECENT_COMMIT_BYTES * 2) / value.length);
    for (let i = 0; i < n; i++) m.setBytes(`k${i}`, value);
    await m.durable();
    m.setBytes('after', value);
    await m.durable();
    await new Promise((resolve) => setImmediate(resolve));
    off();
    expect(seqs.length).toBe(n + 1);
    expect(seqs).toEqual(Array.from({ length: n + 1 }, (_, i) => start + 1 + i));
    await m.close();
  });

  it('tells data writes live, in commit order, without metadata, and reads the same back from the WAL', async () => {
    const m = await OffHeapMap.open<string, unknown>({ dir: freshDir(), threads: 1 });
    const feed = m.changes!;
    const start = feed.lastSequence;
    const live: string[] = [];
    const off = feed.subscribe((seq, key, value) => live.push(text(seq, key, value)));
    m.setBytes('a', Uint8Array.of(1));
    m.set('b', { x: 1 }); // a new msgpackr structure goes with it: not a data write
    const b = Buffer.from(m.getBytes('b')!).toString('hex');
    m.delete('a');
    await m.meta.set('offset', Uint8Array.of(9));
    await m.batch().setBytes('c', Uint8Array.of(3)).delete('b').setMeta('s', Uint8Array.of(1)).write();
    off();
    m.setBytes('after', Uint8Array.of(4));
    await m.durable();
    expect(live.map((l) => l.split(' ').slice(1).join(' '))).toEqual(['a 01', `b ${b}`, 'a -', 'c 03', 'b -']);
    const seqs = live.map((l) => Number(l.split(' ')[0]));
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    const back: string[] = [];
    const r = await feed.since(start, (seq, key, value) => back.push(text(seq, key, value)));
    expect(r.ok).toBe(true);
    expect(back.slice(0, live.length)).toEqual(live);
    expect(back.length).toBe(live.length + 1);
    // From the middle: only what follows.
    const mid: string[] = [];
    await feed.since(seqs[2]!, (seq, key, value) => mid.push(text(seq, key, value)));
    expect(mid.slice(0, 2)).toEqual(live.slice(3));
    expect(await feed.since(feed.lastSequence + 5, () => {})).toEqual({
      ok: false,
      reason: expect.stringMatching(/past/),
    });
    await m.close();
    expect(() => m.changes).toThrow(/closed/i);
  });
});
