import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EngineError, ErrorCodes } from '../base/errors.js';
import { ENTRY_HEADER_SIZE } from '../read/engine-iterator.js';
import { VersionSet } from '../version/version-set.js';
import { Engine } from './engine.js';

const dec = new TextDecoder();
const str = (v: Uint8Array | undefined) => (v === undefined ? undefined : dec.decode(v));
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-engine-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Every file of `d` and its bytes (without LOCK), to check that something left a directory as it found it. */
function directoryBytes(d: string): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  for (const name of readdirSync(d).sort()) if (name !== 'LOCK') out[name] = readFileSync(join(d, name));
  return out;
}

async function entries(db: Engine, options: Parameters<Engine['iterator']>[0] = {}): Promise<string[]> {
  const out: string[] = [];
  for await (const [k, v] of db.iterator(options)) out.push(`${dec.decode(k)}=${dec.decode(v)}`);
  return out;
}

describe('Engine', () => {
  it('puts, gets and deletes; a write is visible before its promise is awaited', async () => {
    const db = await Engine.open(dir);
    const p = db.put('a', '1');
    expect(str(db.getSync('a'))).toBe('1');
    await p;
    await db.put(new Uint8Array([0, 255]), new Uint8Array([1, 2, 3]));
    expect(await db.get(new Uint8Array([0, 255]))).toEqual(new Uint8Array([1, 2, 3]));
    void db.delete('a');
    expect(db.getSync('a')).toBeUndefined();
    expect(await db.get('missing')).toBeUndefined();
    await db.put('clé-日本', 'ü');
    expect(str(db.getSync('clé-日本'))).toBe('ü');
    expect(str(db.getSync(Buffer.from('clé-日本')))).toBe('ü');
    await db.put('empty', '');
    expect(await db.get('empty')).toEqual(new Uint8Array(0));
    await db.close();
  });

  it('writes batches atomically, both forms, and rejects a bad operation without writing any', async () => {
    const db = await Engine.open(dir);
    await db.write([
      { type: 'put', key: 'x', value: '1' },
      { type: 'put', key: 'y', value: '2' },
      { type: 'del', key: 'x' },
    ]);
    expect(await entries(db)).toEqual(['y=2']);
    await db.batch().put('z', '3').del('y').write({ sync: true });
    expect(await entries(db)).toEqual(['z=3']);
    await expect(db.write([{ type: 'put', key: 'w', value: '4' }, { type: 'nope' } as never])).rejects.toMatchObject({
      code: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT',
    });
    expect(await db.get('w')).toBeUndefined();
    await expect(db.put(5 as never, 'v')).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT' });
    await db.close();
  });

  it('applies writes at once even when their promises wait for background work (stalls), and loses none', async () => {
    const db = await Engine.open(dir, {
      writeBufferSize: 4096,
      level0CompactionTrigger: 1,
      level0SlowdownTrigger: 1,
      level0StopTrigger: 2,
    });
    const pending: Promise<void>[] = [];
    for (let i = 0; i < 3000; i++) {
      pending.push(db.put(`k${i}`, `v${i}`));
      expect(str(db.getSync(`k${i}`))).toBe(`v${i}`);
    }
    await Promise.all(pending);
    const s = db.stats();
    expect(s.writeStalls + s.writeSlowdowns).toBeGreaterThan(0);
    expect(s.flushes).toBeGreaterThan(0);
    for (let i = 0; i < 3000; i += 7) expect(str(db.getSync(`k${i}`))).toBe(`v${i}`);
    await db.close();
  });

  it('getSync hands out values the caller owns, from tables and memtables, whatever it does with the key buffer', async () => {
    const db = await Engine.open(dir);
    for (const compression of ['table', 'memtable']) {
      for (let i = 0; i < 200; i++) await db.put(`k${i}`, `${compression} value ${i}`);
      if (compression === 'table') await db.flush();
      // Twice per key (the second read comes from the block cache), with keys of other lengths between.
      for (const i of [7, 7, 150, 7]) {
        const v = db.getSync(`k${i}`)!;
        expect(str(v)).toBe(`${compression} value ${i}`);
        expect(v.byteOffset).toBe(0);
        expect(v.buffer.byteLength).toBe(v.length);
        v.fill(0x21);
      }
      expect(str(db.getSync('k7'))).toBe(`${compression} value 7`);
      expect(str(db.getSync('k150'))).toBe(`${compression} value 150`);
    }
    await db.close();
  });

  it('getMany answers in the order asked', async () => {
    const db = await Engine.open(dir);
    await db.write(['c', 'a', 'b'].map((k) => ({ type: 'put' as const, key: k, value: k.toUpperCase() })));
    expect((await db.getMany(['b', 'zz', 'a', 'c'])).map(str)).toEqual(['B', undefined, 'A', 'C']);
    await db.close();
  });

  it('snapshots and iterators see the state as of their creation, across flushes and compactions', async () => {
    const db = await Engine.open(dir, { writeBufferSize: 8192 });
    for (let i = 0; i < 300; i++) await db.put(`k${String(i).padStart(3, '0')}`, `v${i}`);
    const snap = db.snapshot();
    const it = db.iterator({ gte: 'k100', lt: 'k103' });
    for (let i = 0; i < 300; i++) await db.put(`k${String(i).padStart(3, '0')}`, `w${i}`);
    await db.delete('k101');
    await db.flush();
    await db.compactRange();
    expect(str(db.getSync('k101', { snapshot: snap }))).toBe('v101');
    expect(db.getSync('k101')).toBeUndefined();
    expect(str(await db.get('k102'))).toBe('w102');
    expect((await it.nextv(10)).map(([k, v]) => `${dec.decode(k)}=${dec.decode(v)}`)).toEqual([
      'k100=v100',
      'k101=v101',
      'k102=v102',
    ]);
    await it.close();
    expect(await entries(db, { snapshot: snap, gt: 'k297' })).toEqual(['k298=v298', 'k299=v299']);
    snap.release();
    expect(() => db.getSync('k1', { snapshot: snap })).toThrow(EngineError);
    expect(db.stats().levels.some((l, i) => i > 0 && l.files > 0)).toBe(true);
    await db.close();
  });

  it('iterates with bounds, reverse, limit, seek and without keys or values', async () => {
    const db = await Engine.open(dir);
    for (const k of ['a', 'b', 'c', 'd', 'e']) await db.put(k, k + k);
    expect(await entries(db, { gt: 'a', lte: 'd' })).toEqual(['b=bb', 'c=cc', 'd=dd']);
    expect(await entries(db, { gte: 'b', lt: 'e', reverse: true })).toEqual(['d=dd', 'c=cc', 'b=bb']);
    expect(await entries(db, { reverse: true, limit: 2 })).toEqual(['e=ee', 'd=dd']);
    // Both bounds of a side given: the inclusive one wins, as in abstract-level.
    for (const reverse of [false, true]) {
      const both = await entries(db, { gt: 'b', gte: 'b', lt: 'd', lte: 'd', reverse });
      expect(both).toEqual(reverse ? ['d=dd', 'c=cc', 'b=bb'] : ['b=bb', 'c=cc', 'd=dd']);
      expect(await entries(db, { gt: 'a', gte: 'c', lt: 'e', lte: 'c', reverse })).toEqual(['c=cc']);
    }
    expect(await entries(db, { limit: 0 })).toEqual([]);
    const it = db.iterator({ lt: 'e' });
    it.seek('c');
    expect(str((await it.next())?.[0])).toBe('c');
    it.seek('0');
    expect(str((await it.next())?.[0])).toBe('a');
    it.seek('z');
    expect(await it.next()).toBeUndefined();
    await it.close();
    await expect(it.next()).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_CLOSED' });
    const rit = db.iterator({ reverse: true });
    rit.seek('bb');
    expect(str((await rit.next())?.[0])).toBe('b');
    await rit.close();
    const [[k, v]] = (await db.iterator({ keys: false, limit: 1 }).nextv(5)) as [[Uint8Array, Uint8Array]];
    expect([k.length, str(v)]).toEqual([0, 'aa']);
    await db.close();
  });

  it('nextvInto fills a buffer with length-prefixed entries, leaves what does not fit, and mixes with nextv', async () => {
    const db = await Engine.open(dir);
    for (const k of ['a', 'b', 'c', 'd']) await db.put(k, k.repeat(3));
    await db.flush();
    await db.put('bb', 'x');
    await db.delete('c');
    const parse = (buf: Uint8Array, from: number, end: number) => {
      const out: string[] = [];
      const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
      for (let p = from; p < end; ) {
        const kl = view.getUint32(p, true);
        const vl = view.getUint32(p + 4, true);
        p += ENTRY_HEADER_SIZE;
        out.push(`${dec.decode(buf.subarray(p, p + kl))}=${dec.decode(buf.subarray(p + kl, p + kl + vl))}`);
        p += kl + vl;
      }
      return out;
    };
    const it = db.iterator({ fillCache: false });
    // 'a=aaa' takes 8 + 1 + 3 bytes: an 11-byte target reports the 12 it needs and consumes nothing.
    expect(it.nextvInto(new Uint8Array(11))).toBe(-12);
    const buf = new Uint8Array(2 + 12 + 12 + 5);
    const end = it.nextvInto(buf, 2);
    expect(end).toBe(2 + 12 + 12);
    expect(parse(buf, 2, end)).toEqual(['a=aaa', 'b=bbb']);
    expect((await it.nextv(1)).map(([k, v]) => `${dec.decode(k)}=${dec.decode(v)}`)).toEqual(['bb=x']);
    const rest = new Uint8Array(100);
    const e2 = it.nextvInto(rest);
    expect(parse(rest, 0, e2)).toEqual(['d=ddd']);
    expect(it.nextvInto(rest, 7)).toBe(7);
    await it.close();
    expect(db.stats().blockCache.blocks).toBe(0); // fillCache: false
    expect(() => it.nextvInto(rest)).toThrow(expect.objectContaining({ code: 'HEAPLESS_ERR_ENGINE_CLOSED' }));
    const rev = db.iterator({ reverse: true, keys: false, limit: 2, gt: 'a' });
    expect(parse(rest, 0, rev.nextvInto(rest))).toEqual(['=ddd', '=x']);
    expect(() => rev.nextvInto(rest, 101)).toThrow(
      expect.objectContaining({ code: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT' }),
    );
    await rev.close();
    await db.close();
  });

  it('nextvInto stops at maxEntries, counts them against the limit, and copies long keys and values whole', async () => {
    const db = await Engine.open(dir, { blockSize: 1024 });
    // Keys and values past the 256 bytes below which copies are byte loops; some in a table, some in the memtable.
    const long = (c: string, n: number) => c.repeat(n);
    const entries = ['a', 'b', 'c', 'd', 'e', 'f'].map((k, i) => [
      long(k, 10 + i * 100),
      long(k.toUpperCase(), i * 150),
    ]);
    for (const [k, v] of entries.slice(0, 3)) await db.put(k!, v!);
    await db.flush();
    for (const [k, v] of entries.slice(3)) await db.put(k!, v!);
    const parse = (buf: Uint8Array, end: number) => {
      const out: [string, string][] = [];
      const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
      for (let p = 0; p < end; ) {
        const kl = view.getUint32(p, true);
        const vl = view.getUint32(p + 4, true);
        p += ENTRY_HEADER_SIZE;
        out.push([dec.decode(buf.subarray(p, p + kl)), dec.decode(buf.subarray(p + kl, p + kl + vl))]);
        p += kl + vl;
      }
      return out;
    };
    const buf = new Uint8Array(1 << 16);
    for (const reverse of [false, true]) {
      const it = db.iterator({ reverse, limit: 5 });
      const got: [string, string][] = [];
      const sizes: number[] = [];
      for (let end: number; (end = it.nextvInto(buf, 0, 2)) > 0; ) {
        const page = parse(buf, end);
        sizes.push(page.length);
        got.push(...page);
      }
      expect(sizes).toEqual([2, 2, 1]); // pages of at most 2, and the limit of 5 across them
      const want = reverse ? [...entries].reverse() : entries;
      expect(got).toEqual(want.slice(0, 5));
      await it.close();
    }
    const it = db.iterator();
    for (const bad of [0, -1, 1.5, Number.NaN, '2' as unknown as number]) {
      expect(() => it.nextvInto(buf, 0, bad)).toThrow(
        expect.objectContaining({ code: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT' }),
      );
    }
    expect(parse(buf, it.nextvInto(buf, 0, 1))).toEqual([entries[0]]);
    await it.close();
    await db.close();
  });

  it('recovers from the WAL after close, and from tables after flushes, with sequence numbers intact', async () => {
    let db = await Engine.open(dir, { writeBufferSize: 16 * 1024 });
    for (let i = 0; i < 2000; i++) await db.put(`key${i}`, `value${i}`);
    for (let i = 0; i < 2000; i += 3) await db.delete(`key${i}`);
    const seq = db.stats().lastSequence;
    await db.close();
    db = await Engine.open(dir, { writeBufferSize: 16 * 1024 });
    expect(db.stats().lastSequence).toBe(seq);
    for (let i = 0; i < 2000; i++) expect(str(db.getSync(`key${i}`))).toBe(i % 3 === 0 ? undefined : `value${i}`);
    expect((await entries(db)).length).toBe(2000 - 667);
    await db.close();
  });

  it('reopens after a clean close by reading only (manifest and WAL reused), opening tables at first read', async () => {
    /** Every file but LOCK, with the bytes of the small ones (CURRENT, manifests, WALs). */
    const image = () =>
      readdirSync(dir)
        .filter((f) => f !== 'LOCK')
        .sort()
        .map((f) => (f.endsWith('.sst') ? f : `${f}=${readFileSync(join(dir, f)).toString('hex')}`));
    const options = { writeBufferSize: 16 * 1024 };
    let db = await Engine.open(dir, options);
    for (let i = 0; i < 2000; i++) await db.put(`key${i}`, `value${i}`);
    await db.flush();
    await db.close();
    const before = image();
    expect(before.filter((f) => f.startsWith('MANIFEST-'))).toHaveLength(1);
    // A manifest a crash left behind before CURRENT named it: not the live one, so it goes.
    writeFileSync(join(dir, 'MANIFEST-999999'), 'stray');
    for (let round = 0; round < 2; round++) {
      db = await Engine.open(dir, options);
      expect(db.stats().openTables).toBe(0);
      expect(str(db.getSync('key1234'))).toBe('value1234');
      expect(db.stats().openTables).toBe(1);
      await db.close();
      expect(image()).toEqual(before);
    }
    // Edits append to the reused manifest, and a later open reads them back.
    db = await Engine.open(dir, options);
    for (let i = 0; i < 2000; i += 2) await db.delete(`key${i}`);
    await db.flush();
    await db.compactRange();
    await db.close();
    const manifests = readdirSync(dir).filter((f) => f.startsWith('MANIFEST-'));
    expect(manifests).toEqual(before.filter((f) => f.startsWith('MANIFEST-')).map((f) => f.split('=')[0]));
    // Writes left in the WAL are replayed into the live memtable, and later writes append to that WAL.
    const tables = () => readdirSync(dir).filter((f) => f.endsWith('.sst'));
    const wals = () => readdirSync(dir).filter((f) => f.endsWith('.log'));
    const filesBefore = [...tables(), ...wals(), ...manifests];
    for (let round = 0; round < 3; round++) {
      db = await Engine.open(dir, options);
      for (let r = 0; r < round; r++) expect(str(db.getSync(`late${r}`))).toBe(`x${r}`);
      await db.put(`late${round}`, `x${round}`);
      await db.close();
      expect([...tables(), ...wals(), ...readdirSync(dir).filter((f) => f.startsWith('MANIFEST-'))]).toEqual(
        filesBefore,
      );
    }
    // A WAL whose last record is torn is not appended to: the open records what it replayed in a new manifest.
    const [wal] = wals();
    truncateSync(join(dir, wal!), statSync(join(dir, wal!)).size - 3);
    db = await Engine.open(dir, options);
    expect(readdirSync(dir).filter((f) => f.startsWith('MANIFEST-'))).not.toEqual(manifests);
    expect(wals()).not.toEqual([wal]);
    expect(str(db.getSync('late0'))).toBe('x0');
    expect(str(db.getSync('late1'))).toBe('x1');
    expect(db.getSync('late2')).toBeUndefined();
    for (let i = 0; i < 2000; i++) expect(str(db.getSync(`key${i}`))).toBe(i % 2 === 0 ? undefined : `value${i}`);
    await db.close();
  });

  it('loses nothing when writing the new manifest at open fails: the replayed WAL stays until one records it', async () => {
    let db = await Engine.open(dir);
    for (let i = 0; i < 1000; i++) await db.put(`k${i}`, `v${i}`);
    await db.close();
    // Reopened with a small write buffer, the WAL no longer fits one memtable: it goes to tables and a new manifest.
    const small = { writeBufferSize: 4096 };
    const before = directoryBytes(dir);
    const write = vi.spyOn(VersionSet.prototype, 'writeNewManifest').mockImplementationOnce(() => {
      throw new EngineError(ErrorCodes.IO, 'injected manifest failure');
    });
    try {
      await expect(Engine.open(dir, small)).rejects.toThrow('injected manifest failure');
    } finally {
      write.mockRestore();
    }
    // Deletions run on the threadpool: give one the failed open might have started the time to land.
    await new Promise((r) => setTimeout(r, 50));
    // The tables and the WAL the failed open wrote are gone again; nothing else was touched.
    expect(directoryBytes(dir)).toEqual(before);
    db = await Engine.open(dir, small);
    for (let i = 0; i < 1000; i++) expect(str(db.getSync(`k${i}`))).toBe(`v${i}`);
    await db.close();
  });

  it('an open that fails on a directory that is no database removes the LOCK and READERS it made', async () => {
    writeFileSync(join(dir, 'CURRENT'), 'garbage\n');
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    await expect(Engine.open(dir, { createIfMissing: false })).rejects.toMatchObject({ code: ErrorCodes.CORRUPTION });
    expect(readdirSync(dir).sort()).toEqual(['CURRENT', 'notes.txt']);
    // A LOCK that was there before stays: only what the open made goes.
    writeFileSync(join(dir, 'LOCK'), '');
    await expect(Engine.open(dir)).rejects.toMatchObject({ code: ErrorCodes.CORRUPTION });
    expect(readdirSync(dir).sort()).toEqual(['CURRENT', 'LOCK', 'notes.txt']);
  });

  it('a WAL damaged after the replay has written tables fails the open and leaves the directory as it was', async () => {
    let db = await Engine.open(dir);
    for (let i = 0; i < 1000; i++) await db.put(`k${i}`, `v${i}`);
    await db.close();
    const [log] = readdirSync(dir).filter((f) => f.endsWith('.log'));
    const bytes = readFileSync(join(dir, log!));
    bytes[bytes.length - 200]! ^= 1; // near the end: a 4 KiB memtable has filled several tables by then
    writeFileSync(join(dir, log!), bytes);
    const before = directoryBytes(dir);
    await expect(Engine.open(dir, { writeBufferSize: 4096 })).rejects.toMatchObject({
      code: 'HEAPLESS_ERR_ENGINE_CORRUPTION',
      file: join(dir, log!),
    });
    expect(directoryBytes(dir)).toEqual(before);
    bytes[bytes.length - 200]! ^= 1;
    writeFileSync(join(dir, log!), bytes);
    db = await Engine.open(dir, { writeBufferSize: 4096 });
    for (let i = 0; i < 1000; i++) expect(str(db.getSync(`k${i}`))).toBe(`v${i}`);
    await db.close();
  });

  it('without a WAL, close flushes the memtable so nothing is lost; a WAL can be turned on and off again', async () => {
    let db = await Engine.open(dir, { wal: false });
    await db.put('k', 'v');
    await db.close();
    expect(readdirSync(dir).some((f) => f.endsWith('.log'))).toBe(false);
    db = await Engine.open(dir, { wal: false });
    expect(str(await db.get('k'))).toBe('v');
    await db.close();
    // The first open with a WAL records it in the manifest, so later opens find the log the manifest names.
    for (const wal of [true, true, false, true]) {
      db = await Engine.open(dir, { wal });
      await db.put(`with wal ${wal}`, 'x');
      await db.close();
    }
    db = await Engine.open(dir);
    expect([str(db.getSync('k')), str(db.getSync('with wal true')), str(db.getSync('with wal false'))]).toEqual([
      'v',
      'x',
      'x',
    ]);
    await db.close();
  });

  it('refuses a second open of the same directory, and allows it after close', async () => {
    const db = await Engine.open(dir);
    await expect(Engine.open(dir)).rejects.toMatchObject({
      code: 'HEAPLESS_ERR_ENGINE_LOCKED',
      message: expect.stringContaining(dir),
    });
    await db.close();
    const again = await Engine.open(dir);
    await again.close();
  });

  it('honours createIfMissing and errorIfExists', async () => {
    const missing = join(dir, 'nope');
    // The Level ecosystem matches the message against /does not exist/ and /exists/.
    await expect(Engine.open(missing, { createIfMissing: false })).rejects.toMatchObject({
      code: 'HEAPLESS_ERR_ENGINE_NOT_FOUND',
      message: expect.stringMatching(/does not exist/),
    });
    (await Engine.open(missing)).close();
    await new Promise((r) => setImmediate(r));
    await expect(Engine.open(missing, { errorIfExists: true })).rejects.toMatchObject({
      code: 'HEAPLESS_ERR_ENGINE_EXISTS',
      message: expect.stringMatching(/exists/),
    });
    await expect(Engine.open(dir, { writeBufferSize: -1 })).rejects.toMatchObject({
      code: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT',
    });
  });

  it('rejects calls after close with CLOSED, and close is idempotent', async () => {
    const db = await Engine.open(dir);
    await db.close();
    await db.close();
    await expect(db.put('a', 'b')).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_CLOSED' });
    await expect(db.get('a')).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_CLOSED' });
    expect(() => db.iterator()).toThrow(EngineError);
  });

  it('makes a checkpoint that opens as its own engine with the same contents', async () => {
    const db = await Engine.open(dir, { writeBufferSize: 8192 });
    for (let i = 0; i < 500; i++) await db.put(`k${i}`, `v${i}`);
    await db.flush();
    for (let i = 0; i < 50; i++) await db.put(`late${i}`, `x${i}`);
    const copy = `${dir}-copy`; // beside the database: a checkpoint inside its source is refused
    try {
      await db.checkpoint(copy);
      await db.put('after', 'checkpoint');
      const expected = await entries(db);
      await db.close();
      const cp = await Engine.open(copy);
      const got = await entries(cp);
      expect(got).toEqual(expected.filter((e) => e !== 'after=checkpoint'));
      await cp.close();
      const db2 = await Engine.open(dir);
      await expect(db2.checkpoint(copy)).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT' });
      await db2.close();
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('leaves no file descriptors, handles, timers or workers behind after close, even with open iterators', async () => {
    const fds = () => readdirSync('/proc/self/fd').length;
    const count = () => {
      const m = new Map<string, number>();
      for (const r of process.getActiveResourcesInfo()) m.set(r, (m.get(r) ?? 0) + 1);
      return m;
    };
    const grew = (before: Map<string, number>) =>
      [...count()].filter(([r, n]) => n > (before.get(r) ?? 0)).map(([r, n]) => `${r}+${n - (before.get(r) ?? 0)}`);
    const before = count();
    const fdsBefore = fds();
    const db = await Engine.open(dir, { writeBufferSize: 8192, level0CompactionTrigger: 2 });
    for (let i = 0; i < 3000; i++) await db.put(`key${i}`, `value${i}`, { sync: i % 500 === 0 });
    await db.flush();
    await db.compactRange();
    const it = db.iterator();
    await it.next();
    db.snapshot();
    // The checks can see what is open: the WAL, the manifest, tables, worker threads.
    expect(fds()).toBeGreaterThan(fdsBefore + 2);
    expect(db.stats().workerThreads).toBeGreaterThan(0);
    await db.close();
    expect(grew(before)).toEqual([]);
    expect(fds()).toBe(fdsBefore);
    expect(db.stats().workerThreads).toBe(0);
    expect(readdirSync(dir)).toContain('LOCK'); // kept, unlocked: the lock was the descriptor, counted above
  });
});
