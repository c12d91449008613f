import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tableFileName } from '../base/filenames.js';
import { kindOf, makeInternalKey, sequenceOf, userKeyOf, ValueKind } from '../base/internal-key.js';
import { Memtable } from '../memtable/memtable.js';
import { TableBuilder } from '../table/table-builder.js';
import { TableReader } from '../table/table-reader.js';
import { compactTables, flushMemtable } from './compaction-job.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-job-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Writes table `n` from `key@seq=value` / `key@seq DEL` specs (given in internal-key order). */
function table(n: number, specs: string[]): void {
  const b = new TableBuilder(tableFileName(dir, n), { blockSize: 256 });
  for (const s of specs) {
    const m = /^(\w*)@(\d+)(?:=(.*)| DEL)$/.exec(s)!;
    const kind = m[3] === undefined ? ValueKind.Deletion : ValueKind.Value;
    b.add(makeInternalKey(enc.encode(m[1]), Number(m[2]), kind), enc.encode(m[3] ?? ''));
  }
  b.finish();
}

function dump(n: number): string[] {
  const r = TableReader.open(tableFileName(dir, n), { fileNumber: n });
  const it = r.iterator();
  const out: string[] = [];
  for (it.seekToFirst(); it.valid(); it.next()) {
    const k = it.key();
    const head = `${dec.decode(userKeyOf(k))}@${sequenceOf(k)}`;
    out.push(kindOf(k) === ValueKind.Value ? `${head}=${dec.decode(it.value())}` : `${head} DEL`);
  }
  it.close();
  r.close();
  return out;
}

const task = {
  kind: 'compact' as const,
  targetFileSize: 1 << 20,
  builder: { blockSize: 256 },
  expiryFilter: null,
  now: 0,
};

/** Values of the expiry filter's test format: 'E', flags (bit 0: expires), expiresAt f64 LE, then `text`. */
function expiring(expiresAt: number | null, text: string): Uint8Array {
  const b = Buffer.alloc(10 + text.length);
  b[0] = 0x45;
  b[1] = expiresAt === null ? 0 : 1;
  b.writeDoubleLE(expiresAt ?? 0, 2);
  b.write(text, 10);
  return new Uint8Array(b);
}
const filter = {
  keyPrefix: enc.encode('t'),
  markerOffset: 0,
  marker: 0x45,
  flagsOffset: 1,
  flagsMask: 1,
  expiresAtOffset: 2,
  skipLength: -1,
};

describe('compaction job', () => {
  it('keeps only the newest version when no snapshot needs older ones, and drops tombstones at the bottom', () => {
    table(1, ['a@9=a9', 'b@8 DEL', 'c@7=c7']);
    table(2, ['a@3=a3', 'b@2=b2', 'c@1 DEL', 'd@4=d4']);
    const r = compactTables({
      ...task,
      dir,
      inputs: [1, 2],
      outputNumbers: [10, 11],
      deeper: [],
      smallestSnapshot: 100,
    });
    expect(r.outputs.map((o) => o.number)).toEqual([10]);
    expect(dump(10)).toEqual(['a@9=a9', 'c@7=c7', 'd@4=d4']);
    expect(r.dropped).toBe(4);
  });

  it('keeps what a snapshot can see, and tombstones that may hide data in a deeper level', () => {
    table(1, ['a@9=a9', 'b@8 DEL', 'c@7=c7']);
    table(2, ['a@3=a3', 'a@2=a2', 'b@2=b2', 'c@1 DEL']);
    const deeper = [[{ smallest: enc.encode('b'), largest: enc.encode('bz') }]];
    const r = compactTables({ ...task, dir, inputs: [1, 2], outputNumbers: [10], deeper, smallestSnapshot: 5 });
    // Snapshot 5 sees a@3 (a@2 is hidden from everyone by a@3) and b@2; b@8 DEL stays for the b in the level below;
    // c@1 DEL goes: nothing below it, and without it snapshot 5 still sees no c.
    expect(dump(10)).toEqual(['a@9=a9', 'a@3=a3', 'b@8 DEL', 'b@2=b2', 'c@7=c7']);
    expect(r.dropped).toBe(2);
  });

  it('cuts outputs at the target size, only between user keys', () => {
    const specs: string[] = [];
    for (let i = 0; i < 400; i++) specs.push(`k${String(i).padStart(4, '0')}@${1000 - i}=${'v'.repeat(40)}`);
    table(1, specs);
    const r = compactTables({
      ...task,
      targetFileSize: 4096,
      dir,
      inputs: [1],
      outputNumbers: [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20],
      deeper: [],
      smallestSnapshot: 2000,
    });
    expect(r.outputs.length).toBeGreaterThan(2);
    const all = r.outputs.flatMap((o) => dump(o.number));
    expect(all.length).toBe(400);
    for (const o of r.outputs) expect(o.size).toBeLessThan(4096 * 2);
  });

  it('turns the newest version of an expired key into a tombstone, or drops it when nothing deeper may hold the key', () => {
    const b = new TableBuilder(tableFileName(dir, 1), { blockSize: 256 });
    const put = (k: string, seq: number, v: Uint8Array) =>
      b.add(makeInternalKey(enc.encode(k), seq, ValueKind.Value), v);
    put('ta', 9, expiring(100, 'gone')); // expired, an older version below it: a tombstone hides that
    put('ta', 3, expiring(null, 'old'));
    put('tb', 8, expiring(5000, 'stays')); // not expired yet
    put('tc', 7, expiring(100, 'gone')); // expired, and no deeper table may hold tc: nothing left of it
    put('td', 6, expiring(null, 'no expiry'));
    put('te', 5, expiring(100, 'a snapshot sees it'));
    put('ua', 4, expiring(100, 'not of the prefix'));
    b.finish();
    const deeper = [[{ smallest: enc.encode('ta'), largest: enc.encode('ta') }]];
    const run = (n: number, smallestSnapshot: number) =>
      compactTables({
        ...task,
        dir,
        inputs: [1],
        outputNumbers: [n],
        deeper,
        smallestSnapshot,
        expiryFilter: filter,
        now: 1000,
      });
    const r = run(10, 100);
    expect(dump(10).map((l) => l.split('=')[0])).toEqual(['ta@9 DEL', 'tb@8', 'td@6', 'ua@4']);
    expect(r.expired).toBe(3);
    // A snapshot older than an entry still reads it: such an entry is left alone.
    expect(dump(run(11, 4).outputs[0]!.number).map((l) => l.split('=')[0])).toEqual([
      'ta@9',
      'ta@3',
      'tb@8',
      'tc@7',
      'td@6',
      'te@5',
      'ua@4',
    ]);
    // Without the filter nothing expires.
    compactTables({ ...task, dir, inputs: [1], outputNumbers: [12], deeper, smallestSnapshot: 100 });
    expect(dump(12).map((l) => l.split('=')[0])).toEqual(['ta@9', 'tb@8', 'tc@7', 'td@6', 'te@5', 'ua@4']);
  });

  it('flushes a memtable to a table holding every entry, and writes nothing for an empty one', () => {
    const m = new Memtable(4096);
    const k = enc.encode('key');
    m.add(1, ValueKind.Value, k, 0, 3, enc.encode('v1'), 0, 2);
    m.add(2, ValueKind.Deletion, k, 0, 3, k, 0, 0);
    const r = flushMemtable({ kind: 'flush', dir, number: 7, memtable: m.share(), builder: {} });
    expect(r.outputs[0]!.entries).toBe(2);
    expect(dump(7)).toEqual(['key@2 DEL', 'key@1=v1']);
    expect(
      flushMemtable({ kind: 'flush', dir, number: 8, memtable: new Memtable(4096).share(), builder: {} }).outputs,
    ).toEqual([]);
  });
});
