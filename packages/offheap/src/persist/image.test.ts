import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '@heapless/engine';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapMap } from '../map/offheap-map.js';
import { struct, utf8 } from '../struct.js';
import { beginImageLoad, IMAGE_FILE, verifyMapImage } from './image.js';
import { native, portableImageChecksum } from './native.js';
import { directoryFromImage, FORMAT_VERSION } from './persistence.js';

const root = mkdtempSync(join(tmpdir(), 'offheap-image-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `i${dirs++}`);

type Rec = { id: number; name: string; tags: string[] };
const rec = (i: number): Rec => ({ id: i, name: `name-${i}-${'x'.repeat(i % 40)}`, tags: [`t${i % 7}`] });

/** A closed map directory holding keys k0..k(n-1) (every third one deleted, so there are free blocks and tombstones). */
async function closedMap(n: number): Promise<{ dir: string; model: Map<string, Rec> }> {
  const dir = freshDir();
  const map = await OffHeapMap.open<string, Rec>({ dir });
  const model = new Map<string, Rec>();
  for (let i = 0; i < n; i++) {
    map.set(`k${i}`, rec(i));
    model.set(`k${i}`, rec(i));
  }
  for (let i = 0; i < n; i += 3) {
    map.delete(`k${i}`);
    model.delete(`k${i}`);
  }
  await map.close();
  return { dir, model };
}

async function expectContents(map: OffHeapMap<string, Rec>, model: Map<string, Rec>): Promise<void> {
  expect(map.size).toBe(model.size);
  expect(new Map(map.entries())).toEqual(model);
}

describe('map image', () => {
  it('is written at close and loaded at open, and the loaded map goes on allocating, growing and persisting', async () => {
    const { dir, model } = await closedMap(5000);
    const map = await OffHeapMap.open<string, Rec>({ dir });
    expect(map.stats()).toMatchObject({ loadedFrom: 'image', imageRejected: null });
    await expectContents(map, model);
    const before = map.stats();
    // reuse freed blocks (free lists came back), overwrite, grow the index past its capacity
    for (let i = 0; i < 20000; i++) {
      map.set(`n${i}`, rec(i));
      model.set(`n${i}`, rec(i));
    }
    for (let i = 1; i < 5000; i += 3) {
      map.set(`k${i}`, rec(i + 1));
      model.set(`k${i}`, rec(i + 1));
    }
    expect(map.stats().indexCapacity).toBeGreaterThan(before.indexCapacity);
    await expectContents(map, model);
    await map.close();
    // the next open uses the newer image; a scan of the engine agrees with it
    const again = await OffHeapMap.open<string, Rec>({ dir });
    expect(again.stats().loadedFrom).toBe('image');
    await expectContents(again, model);
    const stats = again.stats();
    await again.close();
    const scanned = await OffHeapMap.open<string, Rec>({ dir, image: false });
    expect(scanned.stats()).toMatchObject({ loadedFrom: 'scan', imageRejected: 'map images disabled' });
    await expectContents(scanned, model);
    expect(scanned.stats().payloadBytes).toBe(stats.payloadBytes);
    await scanned.close();
  });

  it('is written after the engine flushed its memtable, so the next open replays a WAL of two records', async () => {
    const { dir } = await closedMap(5000);
    const logs = readdirSync(dir).filter((f) => f.endsWith('.log'));
    const walBytes = logs.reduce((n, f) => n + statSync(join(dir, f)).size, 0);
    expect(walBytes).toBeGreaterThan(0); // the entry count and the image id
    expect(walBytes).toBeLessThan(200);
  });

  it('carries the meta keys, and refuses a map of another kind through it like through the engine', async () => {
    const { dir } = await closedMap(10);
    await expect(OffHeapMap.open({ dir, keys: 'bytes' })).rejects.toMatchObject({
      code: 'HEAPLESS_ERR_OFFHEAP_INCOMPATIBLE',
    });
    const map = await OffHeapMap.open<string, Rec>({ dir });
    expect(map.stats().loadedFrom).toBe('image');
    expect(map.get('k1')).toEqual(rec(1));
    await map.close();
  });

  it('that cannot be written is a process warning: the close succeeds, nothing is lost, the next open scans', async () => {
    const dir = freshDir();
    const map = await OffHeapMap.open<string, Rec>({ dir });
    map.set('a', rec(1));
    mkdirSync(join(dir, `${IMAGE_FILE}.tmp`)); // opening the temporary file for writing now fails (EISDIR)
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      await map.close();
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.map((w) => (w as Error & { code?: string }).code)).toContain(
      'HEAPLESS_WARN_OFFHEAP_IMAGE_WRITE_FAILED',
    );
    rmSync(join(dir, `${IMAGE_FILE}.tmp`), { recursive: true });
    const again = await OffHeapMap.open<string, Rec>({ dir });
    expect(again.stats()).toMatchObject({ loadedFrom: 'scan', imageRejected: 'no image' });
    expect(again.get('a')).toEqual(rec(1));
    await again.close();
  });

  it('is kept as it is when the map closes unchanged', async () => {
    const { dir, model } = await closedMap(100);
    const path = join(dir, IMAGE_FILE);
    const written = statSync(path).mtimeMs;
    const bytes = readFileSync(path);
    for (let round = 0; round < 2; round++) {
      const map = await OffHeapMap.open<string, Rec>({ dir });
      expect(map.stats().loadedFrom).toBe('image');
      await expectContents(map, model);
      await map.close();
    }
    expect(statSync(path).mtimeMs).toBe(written);
    expect(readFileSync(path).equals(bytes)).toBe(true);
  });

  it('is caught up with writes made to the engine without it while their WAL is there, and ignored once it is not', async () => {
    const { dir, model } = await closedMap(300);
    let engine = await Engine.open(dir);
    await engine.put(Buffer.from('\x01k1'), Buffer.from([0x2a])); // msgpack 42 under the map's data namespace
    await engine.close();
    let map = await OffHeapMap.open<string, unknown>({ dir });
    expect(map.openStats).toEqual({
      source: 'image',
      replayed: 1,
      replayPending: 1,
      replayPages: 0,
      imagePagesCopied: 0,
      imageCheck: 'open',
      imageRejected: null,
    });
    expect(map.get('k1')).toBe(42);
    expect(map.size).toBe(model.size);
    await map.close();
    // An engine opened without the map's pin deletes the WAL after the image once it flushed it.
    engine = await Engine.open(dir);
    await engine.put(Buffer.from('\x01k1'), Buffer.from([0x2b]));
    await engine.flush();
    await engine.close();
    map = await OffHeapMap.open<string, unknown>({ dir });
    expect(map.stats().loadedFrom).toBe('scan');
    expect(map.stats().imageRejected).toMatch(/sequence .*(no longer in the WAL|no log holds)/);
    expect(map.get('k1')).toBe(43);
    expect(map.size).toBe(model.size);
    await map.close();
  });

  it('is not written with image: false, and a map opened so leaves the old image stale, never wrong', async () => {
    const { dir, model } = await closedMap(200);
    const off = await OffHeapMap.open<string, Rec>({ dir, image: false });
    off.set('k2', rec(9999));
    model.set('k2', rec(9999));
    await off.close();
    const map = await OffHeapMap.open<string, Rec>({ dir });
    expect(map.stats().loadedFrom).toBe('scan');
    await expectContents(map, model);
    await map.close();
    const fresh = freshDir();
    const none = await OffHeapMap.open({ dir: fresh, image: false });
    none.set('a', 1);
    await none.close();
    expect(() => statSync(join(fresh, IMAGE_FILE))).toThrow();
  });

  it.each([
    ['a flipped byte in an arena segment', 'checksum mismatch in section', (b: Buffer) => flip(b, b.length - 100)],
    ['a flipped byte in the index', 'checksum mismatch in section 0', (b: Buffer) => flip(b, 64 * 1024 + 9)],
    ['a flipped byte in the header', 'header checksum', (b: Buffer) => flip(b, 70)],
    ['a truncated file', 'truncated', (b: Buffer) => b.subarray(0, b.length - 5000)],
    ['a file cut inside the header', 'truncated', (b: Buffer) => b.subarray(0, 500)],
    ['an empty file', 'truncated', () => Buffer.alloc(0)],
    ['another magic', 'bad magic', (b: Buffer) => Buffer.concat([Buffer.from('NOTANIMG'), b.subarray(8)])],
    ['random bytes', 'bad magic', (b: Buffer) => Buffer.from(b.map((_, i) => (i * 131 + 7) & 0xff))],
  ])('with %s is ignored (reason: %s) and the map is rebuilt from the engine', async (_what, reason, damage) => {
    const { dir, model } = await closedMap(2000);
    const path = join(dir, IMAGE_FILE);
    writeFileSync(path, damage(readFileSync(path)));
    const map = await OffHeapMap.open<string, Rec>({ dir });
    expect(map.stats().loadedFrom).toBe('scan');
    expect(map.stats().imageRejected).toContain(reason);
    await expectContents(map, model);
    await map.close();
    // the close wrote a good image again
    const again = await OffHeapMap.open<string, Rec>({ dir });
    expect(again.stats().loadedFrom).toBe('image');
    await expectContents(again, model);
    await again.close();
  });

  it('holds struct maps, whose views read and write the loaded memory in place', async () => {
    const Point = struct({ x: 'f64', y: 'i32', label: utf8(8) });
    const dir = freshDir();
    const map = await OffHeapMap.open<string, unknown, typeof Point.fields>({ dir, struct: Point });
    for (let i = 0; i < 1000; i++) map.set(`p${i}`, { x: i / 2, y: -i, label: `L${i}` });
    await map.close();
    const again = await OffHeapMap.open<string, unknown, typeof Point.fields>({ dir, struct: Point });
    expect(again.stats().loadedFrom).toBe('image');
    const v = again.view();
    expect(again.locate('p7', v)).toBe(true);
    expect(v.x).toBe(3.5);
    v.y = 1234;
    await again.close();
    const third = await OffHeapMap.open<string, unknown, typeof Point.fields>({ dir, struct: Point });
    expect(third.get('p7')).toEqual({ x: 3.5, y: 1234, label: 'L7' });
    expect(third.get('p999')).toEqual({ x: 499.5, y: -999, label: 'L999' });
    await third.close();
  });

  it('of an empty map round-trips', async () => {
    const dir = freshDir();
    await (await OffHeapMap.open({ dir })).close();
    const map = await OffHeapMap.open({ dir });
    expect(map.stats().loadedFrom).toBe('image');
    expect(map.size).toBe(0);
    map.set('a', 1);
    expect(map.get('a')).toBe(1);
    await map.close();
  });
});

describe('image loaders', () => {
  it('the plain loader reads what the native one maps, and finds the same damage', async () => {
    const { dir } = await closedMap(3000);
    const plain = beginImageLoad(dir, null);
    if (typeof plain === 'string') throw new Error(plain);
    const a = plain.finish();
    if (typeof a === 'string') throw new Error(a);
    if (native !== null) {
      const mapped = beginImageLoad(dir);
      if (typeof mapped === 'string') throw new Error(mapped);
      const b = mapped.finish();
      if (typeof b === 'string') throw new Error(b);
      expect(Buffer.from(b.table).equals(Buffer.from(a.table))).toBe(true);
      expect(b.segments.map((x) => Buffer.from(x))).toEqual(a.segments.map((x) => Buffer.from(x)));
      expect({ ...b, table: 0, segments: 0 }).toEqual({ ...a, table: 0, segments: 0 });
    }
    // whether the image is the engine's current state is decided once, from the engine's id and sequence
    const engine = await Engine.open(dir);
    try {
      const want = { format: FORMAT_VERSION, keys: 'string', codec: 'msgpack', struct: null } as const;
      expect(directoryFromImage(engine, want, a)).toMatchObject({ countHint: 0 });
      expect(directoryFromImage(engine, want, { ...a, sequence: a.sequence - 1 })).toMatch(/sequence/);
      expect(directoryFromImage(engine, want, { ...a, id: new Uint8Array(16) })).toMatch(/id differs/);
    } finally {
      await engine.close();
    }
    const path = join(dir, IMAGE_FILE);
    writeFileSync(path, flip(readFileSync(path), 64 * 1024 + 3));
    for (const helpers of native === null ? [null] : [null, native]) {
      const damaged = beginImageLoad(dir, helpers);
      if (typeof damaged === 'string') throw new Error(damaged);
      expect(damaged.finish()).toBe('image checksum mismatch in section 0');
    }
  });

  it('never load a damaged image: random flips and cuts give the image or a scan, and always the right contents', async () => {
    const { dir: template, model } = await closedMap(1500);
    const good = readFileSync(join(template, IMAGE_FILE));
    const loads = { image: 0, scan: 0 };
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ at: fc.nat(good.length - 1), bits: fc.integer({ min: 1, max: 255 }) }), {
          minLength: 1,
          maxLength: 4,
        }),
        fc.option(fc.nat(good.length), { nil: undefined }),
        async (flips, cut) => {
          const dir = `${template}-${run++}`; // each case on a copy of the same closed map
          cpSync(template, dir, { recursive: true });
          const bad = Buffer.from(good);
          for (const f of flips) bad[f.at]! ^= f.bits;
          writeFileSync(join(dir, IMAGE_FILE), cut === undefined ? bad : bad.subarray(0, cut));
          const map = await OffHeapMap.open<string, Rec>({ dir });
          try {
            loads[map.stats().loadedFrom as 'image' | 'scan']++;
            await expectContents(map, model);
          } finally {
            await map.close();
            rmSync(dir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 40 },
    );
    // the cases did reach the checks (a flip in the padding after the header changes nothing that is read, so
    // such a case loads the image, with the right contents as asserted above)
    expect(loads.scan).toBeGreaterThan(0);
  });
});

describe('image checksum', () => {
  it.runIf(native !== null)('is the same natively (chunks in parallel) as chunk by chunk', () => {
    for (const n of [0, 1, 7, 65535, 65536, 65537, 3 * 65536, 3 * 65536 + 1, 9 * 1024 * 1024 + 3]) {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) b[i] = (i * 31 + (i >>> 11)) & 0xff;
      expect(native!.checksum(b)).toBe(portableImageChecksum(b));
      const sab = new SharedArrayBuffer(n + 10);
      new Uint8Array(sab).set(b, 10);
      const job = native!.checksumStart([new Uint8Array(sab, 10, n), b]);
      expect(native!.checksumWait(job)).toEqual([portableImageChecksum(b), portableImageChecksum(b)]);
    }
  });

  it('changes when any byte changes', () => {
    const b = Buffer.alloc(200_000, 1);
    const base = portableImageChecksum(b);
    for (const at of [0, 65535, 65536, 199_999]) {
      b[at] ^= 0x10;
      expect(portableImageChecksum(b)).not.toBe(base);
      b[at] ^= 0x10;
    }
  });
});

function flip(b: Buffer, at: number): Buffer {
  const c = Buffer.from(b);
  c[at] ^= 0x55;
  return c;
}

describe('verifyMapImage', () => {
  it('passes an intact image, names the section of a flipped byte and its offset, and a damaged header at 0', async () => {
    const { dir } = await closedMap(3000);
    const path = join(dir, IMAGE_FILE);
    const intact = verifyMapImage(dir)!;
    expect(intact).toEqual({ file: path, checked: expect.any(Number), problems: [] });
    expect(intact.checked).toBeGreaterThanOrEqual(2); // the index table and at least one arena segment
    expect(verifyMapImage(freshDir())).toBeUndefined();
    const bytes = readFileSync(path);
    const last = bytes.length - 100; // inside the last section: an arena segment
    const flipped = (at: number) => {
      const copy = Buffer.from(bytes);
      copy[at] = copy[at]! ^ 0x10;
      writeFileSync(path, copy);
      return verifyMapImage(dir)!;
    };
    for (const helpers of [native, null]) {
      const copy = Buffer.from(bytes);
      copy[last] = copy[last]! ^ 0x10;
      writeFileSync(path, copy);
      const report = verifyMapImage(dir, helpers)!;
      expect(report.checked).toBe(intact.checked);
      expect(report.problems).toEqual([
        { file: path, offset: expect.any(Number), message: expect.stringMatching(/arena segment .*checksum/) },
      ]);
      expect(report.problems[0]!.offset % (64 * 1024)).toBe(0);
      expect(report.problems[0]!.offset).toBeLessThanOrEqual(last);
    }
    expect(flipped(30).problems).toEqual([{ file: path, offset: 0, message: 'image header checksum mismatch' }]);
    writeFileSync(path, bytes.subarray(0, bytes.length - 10));
    expect(verifyMapImage(dir)!.problems).toEqual([
      { file: path, offset: 0, message: expect.stringMatching(/truncated|damaged/) },
    ]);
  });
});
