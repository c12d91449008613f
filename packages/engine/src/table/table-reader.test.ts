import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { CorruptionError, ErrorCodes } from '../base/errors.js';
import { compareInternalKeys, makeInternalKey, sequenceOf, userKeyOf, ValueKind } from '../base/internal-key.js';
import { BlockCache } from './block-cache.js';
import { TableBuilder, type TableBuilderOptions } from './table-builder.js';
import { FOOTER_SIZE } from './table-format.js';
import { DELETED, TableReader } from './table-reader.js';

const dir = mkdtempSync(join(tmpdir(), 'heapless-table-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const enc = new TextEncoder();
const dec = new TextDecoder();
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
let nameCounter = 0;
const freshPath = () => join(dir, `${String(++nameCounter).padStart(6, '0')}.sst`);

type Entry = [Uint8Array, Uint8Array];

/** key%05d for i in [0, n) step 2 (odd keys are absent); every 10th key has 3 versions, every 7th newest is deleted. */
function model(n: number): Entry[] {
  const out: Entry[] = [];
  for (let i = 0; i < n; i += 2) {
    const user = enc.encode(`key${String(i).padStart(5, '0')}`);
    const versions = i % 10 === 0 ? [30, 20, 10] : [10];
    versions.forEach((seq, j) => {
      const kind = j === 0 && i % 7 === 0 ? ValueKind.Deletion : ValueKind.Value;
      out.push([
        makeInternalKey(user, seq + (i % 5), kind),
        kind === ValueKind.Value ? enc.encode(`v${i}@${seq}`) : new Uint8Array(0),
      ]);
    });
  }
  return out;
}

function buildTable(es: Entry[], options: TableBuilderOptions = {}): string {
  const path = freshPath();
  const b = new TableBuilder(path, options);
  for (const [k, v] of es) b.add(k, v);
  const meta = b.finish();
  expect(meta.entries).toBe(es.length);
  if (es.length > 0) {
    expect(hex(meta.smallest)).toBe(hex(es[0]![0]));
    expect(hex(meta.largest)).toBe(hex(es[es.length - 1]![0]));
  }
  return path;
}

/** The model's versions by user key (hex), newest first. */
function byUser(es: Entry[]): Map<string, Entry[]> {
  const m = new Map<string, Entry[]>();
  for (const e of es) {
    const u = hex(userKeyOf(e[0]));
    const list = m.get(u) ?? [];
    list.push(e);
    m.set(u, list);
  }
  return m;
}

/** What a get for (user, seq) must return, from the model. */
function expected(versions: Map<string, Entry[]>, user: Uint8Array, seq: number): string {
  for (const [k, v] of versions.get(hex(user)) ?? []) {
    if (sequenceOf(k) <= seq) return k[k.length - 1] === ValueKind.Deletion ? 'DELETED' : dec.decode(v);
  }
  return 'undefined';
}

function show(r: ReturnType<TableReader['get']>): string {
  return r === DELETED ? 'DELETED' : r === undefined ? 'undefined' : dec.decode(r);
}

const variants: Array<[string, TableBuilderOptions]> = [
  ['defaults', {}],
  ['small blocks, restart 1', { blockSize: 64, restartInterval: 1 }],
  ['small blocks, no filter, deflate', { blockSize: 128, bloomBitsPerKey: 0, compression: 'deflate' }],
  ['snappy', { compression: 'snappy' }],
  ['small blocks, lz4', { blockSize: 256, compression: 'lz4' }],
  // zstd is written only where node:zlib has it (Node >= 22.15); compression.test.ts covers reading it everywhere.
  ...(typeof (zlib as { zstdCompressSync?: unknown }).zstdCompressSync === 'function'
    ? [['zstd', { compression: 'zstd' }] as [string, TableBuilderOptions]]
    : []),
];

describe('table reader', () => {
  for (const [name, options] of variants) {
    it(`gets the newest entry at or below a sequence (${name})`, () => {
      const es = model(2000);
      const versions = byUser(es);
      const path = buildTable(es, options);
      const cache = new BlockCache({ capacity: 64 * 1024 });
      const r = TableReader.open(path, { fileNumber: 1, cache });
      try {
        for (let i = 0; i < 2000; i++) {
          const user = enc.encode(`key${String(i).padStart(5, '0')}`);
          for (const seq of [0, 9, 10, 14, 15, 25, 34, 1000]) {
            expect(show(r.get(user, seq)), `${i}@${seq}`).toBe(expected(versions, user, seq));
          }
        }
        expect(show(r.get(enc.encode(''), 100))).toBe('undefined');
        expect(show(r.get(enc.encode('zzz'), 100))).toBe('undefined');
        expect(r.properties.entries).toBe(es.length);
        expect(r.properties.deletions).toBe(es.filter(([k]) => k[k.length - 1] === ValueKind.Deletion).length);
        expect(hex(r.properties.smallest)).toBe(hex(es[0]![0]));
        expect(hex(r.properties.largest)).toBe(hex(es[es.length - 1]![0]));
        expect(r.properties.maxSequence).toBe(30);
        expect(r.properties.minSequence).toBe(10);
      } finally {
        r.close();
      }
    });

    it(`answers a fresh reader's first gets (through the index block) as later ones (flat index) (${name})`, () => {
      const es = model(2000);
      const versions = byUser(es);
      const path = buildTable(es, options);
      const cache = new BlockCache({ capacity: 64 * 1024 });
      // A reader per key (every third, present and absent ones): its first eight gets seek the index block, the
      // ninth and later the flattened index.
      const seqs = [0, 9, 10, 14, 15, 25, 34, 1000];
      for (let i = 0; i < 2001; i += 3) {
        const user = enc.encode(i === 1998 ? 'zzz' : `key${String(i).padStart(5, '0')}`);
        const r = TableReader.open(path, { fileNumber: 1, cache });
        try {
          for (const pass of ['index block', 'flat index']) {
            for (const seq of seqs)
              expect(show(r.get(user, seq)), `${i}@${seq} ${pass}`).toBe(expected(versions, user, seq));
          }
        } finally {
          r.close();
        }
      }
    });

    it(`iterates both ways and seeks (${name})`, () => {
      const es = model(1200);
      const path = buildTable(es, options);
      const r = TableReader.open(path, { fileNumber: 2 });
      const it = r.iterator();
      try {
        const fwd: string[] = [];
        for (it.seekToFirst(); it.valid(); it.next()) fwd.push(`${hex(it.key())}=${hex(it.value())}`);
        expect(fwd).toEqual(es.map(([k, v]) => `${hex(k)}=${hex(v)}`));
        const back: string[] = [];
        for (it.seekToLast(); it.valid(); it.prev()) back.push(hex(it.key()));
        expect(back).toEqual(es.map(([k]) => hex(k)).reverse());
        for (let i = 0; i < 1200; i += 1) {
          const t = makeInternalKey(enc.encode(`key${String(i).padStart(5, '0')}`), 22, ValueKind.Value);
          it.seek(t);
          const want = es.findIndex(([k]) => compareInternalKeys(k, t) >= 0);
          if (want < 0) {
            expect(it.valid()).toBe(false);
            continue;
          }
          expect(hex(it.key())).toBe(hex(es[want]![0]));
          it.prev();
          if (want === 0) expect(it.valid()).toBe(false);
          else expect(hex(it.key())).toBe(hex(es[want - 1]![0]));
          it.next();
          if (want > 0) it.next();
          if (want + 1 < es.length) expect(hex(it.key())).toBe(hex(es[want + 1]![0]));
        }
      } finally {
        it.close();
        r.close();
      }
    });
  }

  it('reads an empty table', () => {
    const r = TableReader.open(buildTable([]), { fileNumber: 3 });
    expect(r.get(enc.encode('a'), 10)).toBeUndefined();
    const it = r.iterator();
    it.seekToFirst();
    expect(it.valid()).toBe(false);
    it.seekToLast();
    expect(it.valid()).toBe(false);
    it.close();
    r.close();
  });

  it('answers mayContain from the bloom filter', () => {
    const es = model(4000);
    const r = TableReader.open(buildTable(es), { fileNumber: 4 });
    for (const [k] of es) expect(r.mayContain(userKeyOf(k))).toBe(true);
    let fp = 0;
    for (let i = 0; i < 4000; i++) if (r.mayContain(enc.encode(`absent${i}`))) fp++;
    expect(fp).toBeLessThan(120);
    expect(r.properties.filterSize).toBeGreaterThan(0);
    r.close();
  });

  it('reports approximate offsets that grow with the key', () => {
    const es = model(4000);
    const path = buildTable(es, { blockSize: 256 });
    const r = TableReader.open(path, { fileNumber: 5 });
    const first = r.approximateOffsetOf(makeInternalKey(enc.encode(''), 1, ValueKind.Value));
    const mid = r.approximateOffsetOf(makeInternalKey(enc.encode('key02000'), 1, ValueKind.Value));
    const end = r.approximateOffsetOf(makeInternalKey(enc.encode('zzz'), 1, ValueKind.Value));
    expect(first).toBe(0);
    expect(mid).toBeGreaterThan(end * 0.4);
    expect(mid).toBeLessThan(end * 0.6);
    expect(end).toBe(r.properties.dataSize);
    r.close();
  });

  it('returns value views that stay valid after the block is evicted', () => {
    const es = model(3000);
    const cache = new BlockCache({ capacity: 1024 });
    const r = TableReader.open(buildTable(es, { blockSize: 256 }), { fileNumber: 6, cache });
    const v = r.get(enc.encode('key00002'), 100) as Uint8Array;
    for (let i = 0; i < 3000; i += 2) r.get(enc.encode(`key${String(i).padStart(5, '0')}`), 100);
    expect(dec.decode(v)).toBe('v2@10');
    expect(cache.usage).toBeLessThanOrEqual(1024);
    r.close();
  });

  it('closes once the last iterator closes, and refuses gets after close', () => {
    const r = TableReader.open(buildTable(model(100)), { fileNumber: 7 });
    const it = r.iterator();
    r.close();
    it.seekToFirst();
    expect(it.valid()).toBe(true);
    expect(r.pinCount).toBe(1);
    it.close();
    it.close();
    expect(r.pinCount).toBe(0);
    expect(() => r.get(enc.encode('key00000'), 100)).toThrow(expect.objectContaining({ code: ErrorCodes.CLOSED }));
    expect(() => r.iterator()).toThrow(expect.objectContaining({ code: ErrorCodes.CLOSED }));
  });

  it('opens tables whose metadata starts before its first read of the tail, or after data inside it', () => {
    // TableReader.open reads the last 64 KiB first; the index, filter and properties blocks are then used in place,
    // copied out (when data blocks fill more than a quarter of that read) or read again (when they start earlier).
    const TAIL = 64 * 1024;
    const where = new Set<string>();
    for (const [n, options] of [
      [40_000, { blockSize: 64 }],
      [20_000, {}],
      [8_000, { bloomBitsPerKey: 100 }],
    ] as const) {
      const es = model(n);
      const versions = byUser(es);
      const path = buildTable(es, options);
      const r = TableReader.open(path, { fileNumber: 8 });
      const metaStart = r.properties.dataSize;
      const tailStart = r.fileSize - TAIL;
      where.add(metaStart < tailStart ? 'read again' : metaStart - tailStart > TAIL / 4 ? 'copied' : 'in place');
      try {
        for (let i = 0; i < n; i += 3) {
          const user = enc.encode(`key${String(i).padStart(5, '0')}`);
          expect(show(r.get(user, 25)), `${i}`).toBe(expected(versions, user, 25));
        }
        const it = r.iterator();
        let count = 0;
        for (it.seekToFirst(); it.valid(); it.next()) count++;
        it.close();
        expect(count).toBe(es.length);
      } finally {
        r.close();
      }
      // The filter, right after the data, is checked wherever it was read from.
      const bytes = readFileSync(path);
      bytes[metaStart + 10]! ^= 0x40;
      writeFileSync(path, bytes);
      expect(() => TableReader.open(path, { fileNumber: 9 })).toThrow(CorruptionError);
    }
    expect([...where].sort()).toEqual(['copied', 'in place', 'read again']);
  });

  it('throws CorruptionError naming a missing file (the manifest lists it, the directory lacks it)', () => {
    const path = join(dir, 'nope.sst');
    expect(() => TableReader.open(path, { fileNumber: 1 })).toThrow(
      expect.objectContaining({ code: ErrorCodes.CORRUPTION, file: path, offset: 0 }),
    );
  });
});

describe('table corruption', () => {
  const es = model(3000);
  const original = buildTable(es, { blockSize: 512 });
  const bytes = readFileSync(original);
  const clean = TableReader.open(original, { fileNumber: 100 });
  const props = clean.properties;
  clean.close();
  const metaStart = props.dataSize + props.filterSize + 5;

  /** Copies the table with byte `at` flipped; returns the path. */
  function flipped(at: number): string {
    const copy = Buffer.from(bytes);
    copy[at]! ^= 0x40;
    const path = freshPath();
    writeFileSync(path, copy);
    return path;
  }

  /** Opens and reads everything (gets and a full scan both ways); returns the error thrown. */
  function readAll(path: string, verifyChecksums = true, checkValues = true): unknown {
    try {
      const r = TableReader.open(path, { fileNumber: 101, verifyChecksums });
      try {
        for (const [k, v] of es) {
          const got = r.get(userKeyOf(k), sequenceOf(k));
          // Never wrong data: a value that comes back is the value written.
          if (checkValues && got instanceof Uint8Array) expect(hex(got)).toBe(hex(v));
        }
        const it = r.iterator();
        try {
          for (it.seekToFirst(); it.valid(); it.next()) {}
          for (it.seekToLast(); it.valid(); it.prev()) {}
        } finally {
          it.close();
        }
      } finally {
        r.close();
      }
    } catch (e) {
      return e;
    }
    return undefined;
  }

  function expectCorruption(e: unknown, path: string, lo: number, hi: number): void {
    expect(e).toBeInstanceOf(CorruptionError);
    const c = e as CorruptionError;
    expect(c.code).toBe(ErrorCodes.CORRUPTION);
    expect(c.file).toBe(path);
    expect(c.offset).toBeGreaterThanOrEqual(lo);
    expect(c.offset).toBeLessThanOrEqual(hi);
    expect(c.message).toContain(path);
  }

  it('detects a flipped byte in a data block', () => {
    for (const at of [0, 700, Math.floor(props.dataSize / 2), props.dataSize - 3]) {
      const path = flipped(at);
      // The offset named is the start of the block holding the byte.
      expectCorruption(readAll(path), path, Math.max(0, at - 600), at);
    }
  });

  it('detects a flipped byte in the filter, properties, metaindex and index', () => {
    for (const at of [
      props.dataSize + 10,
      metaStart + 3,
      bytes.length - FOOTER_SIZE - 20,
      bytes.length - FOOTER_SIZE - props.indexSize,
    ]) {
      const path = flipped(at);
      expectCorruption(readAll(path), path, props.dataSize, bytes.length);
    }
  });

  it('detects a flipped byte anywhere in the footer', () => {
    for (let i = 0; i < FOOTER_SIZE; i++) {
      const at = bytes.length - FOOTER_SIZE + i;
      const path = flipped(at);
      expectCorruption(readAll(path), path, bytes.length - FOOTER_SIZE, bytes.length);
    }
  });

  it('detects a truncated file', () => {
    for (const len of [0, 10, FOOTER_SIZE - 1, FOOTER_SIZE, 1000, bytes.length - 1]) {
      const path = freshPath();
      writeFileSync(path, bytes);
      truncateSync(path, len);
      expectCorruption(readAll(path), path, 0, bytes.length);
    }
  });

  it('without checksums, structural damage is still a CorruptionError, never a crash', () => {
    for (let at = 1; at < props.dataSize; at += 1499) {
      const path = flipped(at);
      // Values are not checked here (nothing can catch a flipped value byte without the CRC); only the error type is.
      const e = readAll(path, false, false);
      if (e !== undefined) expect(e).toBeInstanceOf(CorruptionError);
    }
  });
});

describe('table debug dump', () => {
  it('lists properties, index entries and entries', () => {
    const path = buildTable(
      [
        [makeInternalKey(enc.encode('a'), 3, ValueKind.Value), enc.encode('x')],
        [makeInternalKey(enc.encode('a'), 2, ValueKind.Deletion), new Uint8Array(0)],
        [makeInternalKey(enc.encode('cat'), 1, ValueKind.Value), enc.encode('yz')],
      ],
      { bloomBitsPerKey: 0 },
    );
    const r = TableReader.open(path, { fileNumber: 9 });
    const lines = r.debugDump({ entries: true }).split('\n');
    expect(lines[0]).toMatch(/3 entries \(1 deletions\) in 1 blocks/);
    // The only index entry is the short successor of "cat": "d" with the largest sequence.
    expect(lines[1]).toBe(`index 64@${2 ** 45 - 1} -> block @0+${r.properties.dataSize - 5}`);
    expect(lines.slice(2)).toEqual(['  61@3 = 78', '  61@2 del', '  636174@1 = 797a']);
    r.close();
  });
});

describe('table scans', () => {
  // ~2.5 MB of data: a forward scan crosses several 256 KiB readahead windows, with blocks straddling their ends.
  const es: Entry[] = [];
  for (let i = 0; i < 20_000; i++) {
    es.push([
      makeInternalKey(enc.encode(`row${String(i).padStart(6, '0')}`), 1, ValueKind.Value),
      new Uint8Array(120).fill(i & 255),
    ]);
  }
  const path = buildTable(es, { blockSize: 3000 });

  function scan(it: ReturnType<TableReader['iterator']>): number {
    let n = 0;
    for (it.seekToFirst(); it.valid(); it.next(), n++) {
      expect(hex(it.key())).toBe(hex(es[n]![0]));
      expect(it.value()[0]).toBe(n & 255);
    }
    return n;
  }

  it('reads ahead on forward scans without changing what they return', () => {
    const r = TableReader.open(path, { fileNumber: 20 });
    const it = r.iterator();
    expect(scan(it)).toBe(es.length);
    // Seek into the middle and scan on: the window restarts from there.
    it.seek(es[12_345]![0]);
    for (let n = 12_345; n < 13_000; n++, it.next()) expect(hex(it.key())).toBe(hex(es[n]![0]));
    it.close();
    r.close();
  });

  it('fills the block cache with copies, or not at all with fillCache: false', () => {
    const cache = new BlockCache({ capacity: 64 << 20 });
    const r = TableReader.open(path, { fileNumber: 21, cache });
    const cold = r.iterator({ fillCache: false });
    expect(scan(cold)).toBe(es.length);
    cold.close();
    expect(cache.size).toBe(0);
    const warm = r.iterator();
    expect(scan(warm)).toBe(es.length);
    warm.close();
    expect(cache.size).toBe(r.properties.dataBlocks);
    // Charged bytes match the blocks: no cached block keeps a 256 KiB window alive.
    expect(cache.usage).toBeLessThan(r.properties.dataSize + r.properties.dataBlocks * 200);
    const again = r.iterator();
    expect(scan(again)).toBe(es.length);
    again.close();
    expect(cache.stats().hits).toBeGreaterThanOrEqual(r.properties.dataBlocks);
    r.close();
  });

  it('reports a damaged block inside a readahead window with its own offset', () => {
    const bytes = readFileSync(path);
    const at = 1_500_000;
    bytes[at]! ^= 1;
    const bad = freshPath();
    writeFileSync(bad, bytes);
    const r = TableReader.open(bad, { fileNumber: 22 });
    const it = r.iterator();
    try {
      scan(it);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(CorruptionError);
      expect((e as CorruptionError).offset).toBeLessThanOrEqual(at);
      expect((e as CorruptionError).offset).toBeGreaterThan(at - 3100);
    } finally {
      it.close();
      r.close();
    }
  });
});
