import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OffHeapMap } from '@heapless/offheap';
import { pack, unpack } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { spawn } from '../runtime/spawn.js';
import { KvActor } from './kv-actor.js';

const refs: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  for (const r of refs.splice(0)) await r.stop();
});

function kv(opts: ConstructorParameters<typeof KvActor>[1] = {}) {
  const ref = spawn(new KvActor(new OffHeapMap<string, unknown>({ threads: 1 }), { persistent: false, ...opts }));
  refs.push(ref);
  return ref;
}

describe('KvActor', () => {
  it('stores the bytes it is given and returns them as they are', async () => {
    const ref = kv();
    const bytes = pack({ name: 'ada', age: 36 });
    await ref.set('u:1', bytes);
    const back = await ref.get('u:1');
    expect(Buffer.from(back!).equals(Buffer.from(bytes))).toBe(true);
    expect(unpack(back!)).toEqual({ name: 'ada', age: 36 });
    expect(await ref.has('u:1')).toBe(true);
    expect(await ref.get('u:2')).toBeUndefined();
    expect(await ref.size()).toBe(1);
  });

  it('sets and gets many, deletes, and reports off-heap memory', async () => {
    const ref = kv();
    await ref.setMany([
      ['a', pack(1)],
      ['b', pack(2)],
    ]);
    expect((await ref.getMany(['a', 'x', 'b'])).map((v) => (v === undefined ? v : unpack(v)))).toEqual([
      1,
      undefined,
      2,
    ]);
    expect(await ref.delete('a')).toBe(true);
    expect(await ref.delete('a')).toBe(false);
    const stats = await ref.stats();
    expect(stats.entries).toBe(1);
    expect(stats.arenaBytes).toBeGreaterThan(0);
    expect(stats.heapUsedBytes).toBeGreaterThan(0);
  });

  it('bounds a getMany by bytes: RESULT_TOO_LARGE past maxResultBytes, one value alone always answered', async () => {
    const ref = kv({ maxResultBytes: 1000 });
    await ref.setMany([
      ['big', new Uint8Array(1500).fill(1)],
      ['a', new Uint8Array(600).fill(2)],
      ['b', new Uint8Array(390).fill(3)],
      ['c', new Uint8Array(1)],
    ]);
    // 605 + 395 = 1000 bytes with their headers: at the bound, answered; a miss costs its nil byte.
    expect((await ref.getMany(['a', 'b'])).map((v) => v?.length)).toEqual([600, 390]);
    expect((await ref.getMany(['big'])).map((v) => v?.length)).toEqual([1500]); // alone: as get answers it
    await expect(ref.getMany(['a', 'b', 'x'])).rejects.toMatchObject({ code: 'RESULT_TOO_LARGE' });
    await expect(ref.getMany(['c', 'big'])).rejects.toMatchObject({
      code: 'RESULT_TOO_LARGE',
      message: expect.stringContaining('ask for fewer keys'),
    });
    // The default is 1 MiB: a thousand 64 KiB values (64 MB) are refused, not built into one reply.
    const dflt = kv();
    const value = new Uint8Array(64 * 1024);
    await dflt.setMany(Array.from({ length: 16 }, (_, i): [string, Uint8Array] => [`v${i}`, value]));
    const keys = Array.from({ length: 1000 }, (_, i) => `v${i % 16}`);
    await expect(dflt.getMany(keys)).rejects.toMatchObject({ code: 'RESULT_TOO_LARGE' });
    expect((await dflt.getMany(keys.slice(0, 15))).length).toBe(15);
  });

  it('answers bad input with typed errors and writes nothing from a bad batch', async () => {
    const ref = kv({ maxKeyBytes: 8, maxValueBytes: 16 });
    const raw = ref as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    await expect(raw.set(1, pack(1))).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
    await expect(raw.set('k', { not: 'bytes' })).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
    await expect(ref.set('k'.repeat(9), pack(1))).rejects.toMatchObject({ code: 'KEY_TOO_LARGE' });
    await expect(ref.get('é'.repeat(5))).rejects.toMatchObject({ code: 'KEY_TOO_LARGE' }); // 10 UTF-8 bytes
    await expect(ref.set('k', new Uint8Array(17))).rejects.toMatchObject({ code: 'VALUE_TOO_LARGE' });
    await expect(
      ref.setMany([
        ['ok', pack(1)],
        ['bad', new Uint8Array(17)],
      ]),
    ).rejects.toMatchObject({ code: 'VALUE_TOO_LARGE' });
    expect(await ref.has('ok')).toBe(false);
    await expect(ref.set('s', pack(1), { sync: true })).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
    expect(await ref.has('s')).toBe(false);
  });

  it('refuses keys and scan bounds with a lone surrogate: no two keys name one record', async () => {
    const ref = kv();
    await ref.set('\ufffd', pack('replacement character'));
    for (const bad of ['\ud800', 'x\udfff', '\ud83dx']) {
      await expect(ref.set(bad, pack(1))).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
      await expect(ref.get(bad)).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
      await expect(ref.getMany(['a', bad])).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
      await expect(
        ref.setMany([
          ['a', pack(1)],
          [bad, pack(1)],
        ]),
      ).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
      await expect(ref.has(bad)).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
      await expect(ref.delete(bad)).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
      for (const bound of ['prefix', 'gte', 'lt', 'cursor']) {
        await expect(ref.scan({ [bound]: bad })).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
      }
    }
    expect(await ref.size()).toBe(1);
    expect(unpack((await ref.get('\ufffd'))!)).toBe('replacement character');
  });
});

describe('KvActor.scan', () => {
  it('pages through a prefix or a range in key order, resumable by cursor', async () => {
    const ref = kv();
    const keys = Array.from({ length: 250 }, (_, i) => `u:${String(i).padStart(3, '0')}`);
    await ref.setMany([...keys.map((k): [string, Uint8Array] => [k, pack(k)]), ['other', pack(0)]]);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await ref.scan({ prefix: 'u:', limit: 40, cursor });
      for (const [k, v] of page.entries) {
        expect(unpack(v)).toBe(k);
        seen.push(k);
      }
      cursor = page.cursor;
    } while (cursor !== undefined);
    expect(seen).toEqual(keys);
    const range = await ref.scan({ gte: 'u:010', lt: 'u:013' });
    expect(range.entries.map(([k]) => k)).toEqual(['u:010', 'u:011', 'u:012']);
    expect(range.cursor).toBeUndefined();
    await expect(ref.scan({ limit: 0 })).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
  });

  it('orders keys by their UTF-8 bytes (code points), on memory-only and persisted maps alike', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-kv-'));
    try {
      const persisted = spawn(new KvActor(await OffHeapMap.open<string, unknown>({ dir, threads: 1 })));
      for (const ref of [kv(), persisted]) {
        // UTF-16 order would put '😀' (0xd83d...) before '\uffff'; code point order puts it after.
        await ref.setMany(['o:😀', 'o:\uffff', 'o:z', 'o:é'].map((k): [string, Uint8Array] => [k, pack(k)]));
        expect((await ref.scan({ prefix: 'o:' })).entries.map(([k]) => k)).toEqual(['o:z', 'o:é', 'o:\uffff', 'o:😀']);
        expect((await ref.scan({ prefix: 'o:', cursor: 'o:\uffff' })).entries.map(([k]) => k)).toEqual(['o:😀']);
      }
      await persisted.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('ends a page early once it holds maxPageBytes, so that a page of large values still fits a frame', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-kv-'));
    try {
      const ref = spawn(
        new KvActor(await OffHeapMap.open<string, unknown>({ dir, threads: 1 }), { maxPageBytes: 10_000 }),
      );
      const big = new Uint8Array(3000).fill(7);
      await ref.setMany(Array.from({ length: 20 }, (_, i): [string, Uint8Array] => [`b:${i.toString(36)}`, big]));
      const sizes: number[] = [];
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await ref.scan({ prefix: 'b:', limit: 100, cursor });
        sizes.push(page.entries.length);
        seen.push(...page.entries.map(([k]) => k));
        cursor = page.cursor;
      } while (cursor !== undefined);
      expect(sizes).toEqual([4, 4, 4, 4, 4]); // 4 × 3003 bytes reach 10,000: the page ends there
      expect(seen).toHaveLength(20);
      expect(new Set(seen).size).toBe(20);
      await ref.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('KvActor over a persisted map', () => {
  it('answers writes once durable, and finds them again after stop and reopen', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heapless-kv-'));
    try {
      const open = async () => spawn(new KvActor(await OffHeapMap.open<string, unknown>({ dir, threads: 1 })));
      const a = await open();
      const writes = Array.from({ length: 100 }, (_, i) => a.set(`k${i}`, pack({ i })));
      writes.push(a.set('synced', pack('yes'), { sync: true }));
      await Promise.all(writes);
      expect(await a.delete('k0')).toBe(true);
      await a.flush();
      await a.stop(); // onStop closes the map and its engine
      const b = await open();
      expect(await b.size()).toBe(100);
      expect(unpack((await b.get('k42'))!)).toEqual({ i: 42 });
      expect(unpack((await b.get('synced'))!)).toBe('yes');
      expect(await b.has('k0')).toBe(false);
      await b.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
