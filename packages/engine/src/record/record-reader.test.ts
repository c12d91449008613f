import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CorruptionError } from '../base/errors.js';
import { BLOCK_SIZE, HEADER_SIZE } from './record-format.js';
import { RecordReader } from './record-reader.js';
import { RecordWriter } from './record-writer.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-log-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function record(i: number, size: number): Uint8Array {
  const r = new Uint8Array(size);
  for (let j = 0; j < size; j++) r[j] = (i * 31 + j) & 0xff;
  return r;
}

function writeLog(path: string, sizes: number[]): void {
  const w = new RecordWriter(path, 16);
  sizes.forEach((s, i) => {
    w.addRecord(record(i, s), 0, s);
    if (i % 3 === 0) w.writePending();
  });
  w.close();
}

function readAll(path: string): { records: Uint8Array[]; reader: RecordReader } {
  const reader = new RecordReader(path);
  const records: Uint8Array[] = [];
  for (let r = reader.readRecord(); r; r = reader.readRecord()) records.push(Uint8Array.from(r));
  return { records, reader };
}

describe('log writer and reader', () => {
  it('round-trips records of every size, including ones spanning several blocks and exact block fits', () => {
    const sizes = [
      0,
      1,
      100,
      BLOCK_SIZE - HEADER_SIZE,
      BLOCK_SIZE,
      3 * BLOCK_SIZE + 17,
      5,
      BLOCK_SIZE - 2 * HEADER_SIZE - 3,
      2,
      1,
    ];
    const path = join(dir, 'a.log');
    writeLog(path, sizes);
    const { records, reader } = readAll(path);
    expect(records.map((r) => r.length)).toEqual(sizes);
    records.forEach((r, i) => {
      expect(r).toEqual(record(i, sizes[i]!));
    });
    expect(reader.tornTail).toBe(false);
    expect(reader.validLength).toBe(readFileSync(path).length);
  });

  it('appends to an existing log as if it had been written in one go, across block ends', () => {
    const first = [2 * BLOCK_SIZE, BLOCK_SIZE - 30];
    const second = [30, BLOCK_SIZE + 5, 0, 7];
    const path = join(dir, 'g.log');
    writeLog(path, first);
    // The first part ends 2 bytes short of a block end: the next record must pad and start the next block.
    const { reader } = readAll(path);
    expect(reader.fileSize % BLOCK_SIZE).toBe(BLOCK_SIZE - 2);
    const w = new RecordWriter(path, 16, reader.validLength);
    second.forEach((s, i) => {
      w.addRecord(record(first.length + i, s), 0, s);
    });
    w.close();
    const oneGo = join(dir, 'h.log');
    writeLog(oneGo, [...first, ...second]);
    expect(readFileSync(path)).toEqual(readFileSync(oneGo));
    expect(readAll(path).records.map((r) => r.length)).toEqual([...first, ...second]);
  });

  it('pads a block end too small for a header with zeros', () => {
    const path = join(dir, 'b.log');
    writeLog(path, [BLOCK_SIZE - HEADER_SIZE - 3, 10]);
    const bytes = readFileSync(path);
    expect(bytes.subarray(BLOCK_SIZE - 3, BLOCK_SIZE)).toEqual(Buffer.alloc(3));
    expect(readAll(path).records.map((r) => r.length)).toEqual([BLOCK_SIZE - HEADER_SIZE - 3, 10]);
  });

  it('drops a torn tail at every truncation point without reporting corruption', () => {
    const sizes = [50, 2 * BLOCK_SIZE, 70, 300];
    const path = join(dir, 'c.log');
    writeLog(path, sizes);
    const full = readFileSync(path);
    const ends: number[] = [];
    {
      const r = new RecordReader(path);
      while (r.readRecord()) ends.push(r.validLength);
    }
    for (const cut of [1, 6, 7, 40, 57, 58, 1000, BLOCK_SIZE + 3, full.length - 300, full.length - 1]) {
      writeFileSync(path, full.subarray(0, cut));
      const { records, reader } = readAll(path);
      const expected = ends.filter((e) => e <= cut).length;
      expect(records.length, `cut at ${cut}`).toBe(expected);
      expect(reader.tornTail || ends.includes(cut)).toBe(true);
    }
  });

  it('drops a last record whose bytes did not all land (bad checksum at the end, or zeros)', () => {
    const path = join(dir, 'd.log');
    writeLog(path, [10, 20, 30]);
    const bytes = readFileSync(path);
    bytes[bytes.length - 2]! ^= 0x40;
    writeFileSync(path, bytes);
    expect(readAll(path).records.map((r) => r.length)).toEqual([10, 20]);
    writeFileSync(path, Buffer.concat([readFileSync(path), Buffer.alloc(5000)]));
    truncateSync(path, bytes.length + 5000);
    expect(readAll(path).records.map((r) => r.length)).toEqual([10, 20]);
  });

  it('reports a bad checksum in the middle of the log as corruption naming file and offset', () => {
    const path = join(dir, 'e.log');
    writeLog(path, [10, 20, 30, 40]);
    const bytes = readFileSync(path);
    const second = HEADER_SIZE + 10;
    bytes[second + HEADER_SIZE + 3]! ^= 1; // payload byte of the second record
    writeFileSync(path, bytes);
    const reader = new RecordReader(path);
    expect(reader.readRecord()?.length).toBe(10);
    let err: unknown;
    try {
      reader.readRecord();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CorruptionError);
    expect((err as CorruptionError).offset).toBe(second);
    expect((err as CorruptionError).file).toBe(path);
  });

  it('reports a damaged length in the middle as corruption, not as the end of the log', () => {
    const path = join(dir, 'f.log');
    writeLog(path, [10, 20, 30, 2 * BLOCK_SIZE]);
    const bytes = readFileSync(path);
    bytes[HEADER_SIZE + 10 + 5] = 0x7f; // length of the second record now runs far beyond
    writeFileSync(path, bytes);
    expect(() => readAll(path)).toThrow(CorruptionError);
  });

  describe("the manifest's policy ('cut'): only a record cut short by the end of the file is a torn tail", () => {
    const sizes = [10, 20, 30];
    function readCut(path: string): number[] {
      const reader = new RecordReader(path, 'cut');
      const out: number[] = [];
      for (let r = reader.readRecord(); r; r = reader.readRecord()) out.push(r.length);
      return out;
    }

    it('drops a last record cut short at any point, and zeros where a record should start', () => {
      const path = join(dir, 'm.log');
      writeLog(path, sizes);
      const full = readFileSync(path);
      const lastAt = full.length - HEADER_SIZE - 30;
      for (let cut = lastAt + 1; cut < full.length; cut++) {
        writeFileSync(path, full.subarray(0, cut));
        expect(readCut(path), `cut at ${cut}`).toEqual([10, 20]);
      }
      writeFileSync(path, Buffer.concat([full, Buffer.alloc(100)]));
      expect(readCut(path)).toEqual(sizes);
    });

    it('reports any flipped byte of the last record as corruption at its offset, length bytes included', () => {
      const path = join(dir, 'n.log');
      writeLog(path, sizes);
      const full = readFileSync(path);
      const lastAt = full.length - HEADER_SIZE - 30;
      for (let i = lastAt; i < full.length; i++) {
        for (const mask of [0x01, 0x80]) {
          const bad = Buffer.from(full);
          bad[i]! ^= mask;
          writeFileSync(path, bad);
          expect(() => readCut(path), `byte ${i} ^ ${mask}`).toThrow(
            expect.objectContaining({ code: 'HEAPLESS_ERR_ENGINE_CORRUPTION', file: path, offset: lastAt }),
          );
          // The WAL's policy takes the same damage for the torn tail of a write that did not all land.
          if (i >= lastAt + HEADER_SIZE) expect(readAll(path).records.map((r) => r.length)).toEqual([10, 20]);
        }
      }
    });

    it('reports nonzero garbage after the last record as corruption', () => {
      const path = join(dir, 'o.log');
      writeLog(path, sizes);
      const full = readFileSync(path);
      writeFileSync(path, Buffer.concat([full, Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 9])]));
      expect(() => readCut(path)).toThrow(expect.objectContaining({ offset: full.length }));
    });
  });
});
