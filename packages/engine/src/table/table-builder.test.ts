import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../base/errors.js';
import { makeInternalKey, ValueKind } from '../base/internal-key.js';
import type { BlockIterator } from './block-iterator.js';
import { TableBuilder } from './table-builder.js';
import { TableReader } from './table-reader.js';

const dir = mkdtempSync(join(tmpdir(), 'heapless-builder-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const enc = new TextEncoder();
let n = 0;
const freshPath = () => join(dir, `${++n}.sst`);
const ik = (s: string, seq = 1, kind = ValueKind.Value) => makeInternalKey(enc.encode(s), seq, kind);

describe('table builder', () => {
  it('rejects keys out of internal-key order, duplicates and keys shorter than a trailer', () => {
    const b = new TableBuilder(freshPath());
    b.add(ik('b', 5), enc.encode('x'));
    expect(() => b.add(ik('a', 5), enc.encode('x'))).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }),
    );
    expect(() => b.add(ik('b', 5), enc.encode('x'))).toThrow(/increasing/);
    expect(() => b.add(ik('b', 6), enc.encode('x'))).toThrow(/increasing/); // newer sorts first
    b.add(ik('b', 4), enc.encode('x'));
    expect(() => b.add(new Uint8Array(3), enc.encode('x'))).toThrow(/trailer/);
    b.abandon();
  });

  it('rejects bad options', () => {
    expect(() => new TableBuilder(freshPath(), { blockSize: 1 })).toThrow(/blockSize/);
    expect(() => new TableBuilder(freshPath(), { bloomBitsPerKey: -1 })).toThrow(/bloomBitsPerKey/);
    expect(() => new TableBuilder(freshPath(), { compression: 'lzma' as 'none' })).toThrow(/compression/);
    expect(() => new TableBuilder(join(dir, 'no/such/dir/x.sst'))).toThrow(
      expect.objectContaining({ code: ErrorCodes.IO }),
    );
  });

  it('abandon() closes and deletes the file; finish() reports the file size', () => {
    const p1 = freshPath();
    const b1 = new TableBuilder(p1);
    b1.add(ik('a'), enc.encode('1'));
    b1.abandon();
    expect(existsSync(p1)).toBe(false);
    expect(() => b1.add(ik('b'), enc.encode('1'))).toThrow(expect.objectContaining({ code: ErrorCodes.CLOSED }));

    const p2 = freshPath();
    const b2 = new TableBuilder(p2);
    b2.add(ik('a'), enc.encode('1'));
    const meta = b2.finish();
    expect(meta.fileSize).toBe(statSync(p2).size);
    expect(() => b2.finish()).toThrow(expect.objectContaining({ code: ErrorCodes.CLOSED }));
    b2.abandon(); // no-op after a successful finish
    expect(existsSync(p2)).toBe(true);
  });

  it('grows its size estimate as data is added', () => {
    const b = new TableBuilder(freshPath(), { blockSize: 1024 });
    let last = b.fileSizeEstimate;
    for (let i = 0; i < 1000; i++) {
      b.add(ik(`key${String(i).padStart(6, '0')}`), new Uint8Array(100));
      expect(b.fileSizeEstimate).toBeGreaterThanOrEqual(last);
      last = b.fileSizeEstimate;
    }
    expect(last).toBeGreaterThan(100_000);
    expect(b.finish().fileSize).toBeGreaterThan(last);
  });

  it('compresses blocks with deflate only when that pays, and reads them back', () => {
    const write = (compression: 'none' | 'deflate', value: (i: number) => Uint8Array) => {
      const path = freshPath();
      const b = new TableBuilder(path, { compression });
      for (let i = 0; i < 2000; i++) b.add(ik(`key${String(i).padStart(6, '0')}`), value(i));
      return { path, size: b.finish().fileSize };
    };
    const text = (i: number) => enc.encode(`the value of entry number ${i} is a fairly repetitive string`);
    const plain = write('none', text);
    const packed = write('deflate', text);
    expect(packed.size).toBeLessThan(plain.size * 0.6);
    const r = TableReader.open(packed.path, { fileNumber: 1 });
    expect(r.properties.compression).toBe('deflate');
    expect(new TextDecoder().decode(r.get(enc.encode('key001234'), 10) as Uint8Array)).toBe(
      new TextDecoder().decode(text(1234)),
    );
    r.close();

    // Random bytes do not compress: stored plain, so the file is no bigger than without compression.
    const random = (i: number) => {
      const v = new Uint8Array(100);
      let x = i * 2654435761 + 1;
      for (let j = 0; j < 100; j++) v[j] = (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24;
      return v;
    };
    // (The properties block names the option: 'deflate' is 3 bytes longer than 'none'.)
    expect(write('deflate', random).size).toBe(write('none', random).size + 3);
  });

  it('shortens index separators between blocks', () => {
    const path = freshPath();
    const b = new TableBuilder(path, { blockSize: 256 });
    const long = 'x'.repeat(100);
    for (let i = 0; i < 200; i++) b.add(ik(`${String(i * 3).padStart(4, '0')}${long}`), new Uint8Array(40));
    b.finish();
    const r = TableReader.open(path, { fileNumber: 2 });
    // Blocks hold 2 entries of 104-byte user keys. Between "0003x..." and "0006x..." the separator is "0004"; between
    // "0009x..." and "0012x..." nothing shorter exists ('0' + 1 is not below '1') and the last key is used.
    const it = (r as unknown as { indexIterator(): BlockIterator }).indexIterator();
    const users: string[] = [];
    for (it.seekToFirst(); it.valid(); it.next())
      users.push(new TextDecoder().decode(it.key().subarray(0, it.key().length - 8)));
    expect(users).toContain('0004');
    expect(users.filter((u) => u.length === 4).length).toBeGreaterThan(users.length / 3);
    expect(users.filter((u) => u.length === 104).length).toBeGreaterThan(0);
    // The last block's separator is the short successor of its last key: "0597x..." -> "1".
    expect(users[users.length - 1]).toBe('1');
    r.close();
  });

  it('round-trips values larger than a block and than the output buffer', () => {
    const path = freshPath();
    const b = new TableBuilder(path, { compression: 'deflate' });
    const big = (n: number, seed: number) => new Uint8Array(n).map((_, i) => (i * seed) & 255);
    const sizes = [0, 5000, 300_000, 1_100_000, 10];
    for (const [i, n] of sizes.entries()) b.add(ik(`k${i}`), big(n, i + 1));
    b.finish();
    const r = TableReader.open(path, { fileNumber: 3 });
    sizes.forEach((n, i) => {
      const v = r.get(enc.encode(`k${i}`), 10) as Uint8Array;
      expect(v.length).toBe(n);
      expect(Buffer.compare(v, big(n, i + 1))).toBe(0);
    });
    r.close();
  });

  it('writes an empty table', () => {
    const meta = new TableBuilder(freshPath()).finish();
    expect(meta.entries).toBe(0);
    expect(meta.smallest.length).toBe(0);
    expect(meta.largest.length).toBe(0);
  });
});
