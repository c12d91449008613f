import { describe, expect, it } from 'vitest';
import { hashBytes, KeyHasher, utf8Length, writeUtf8 } from '../key-bytes.js';
import {
  Arena,
  LOC_TOMBSTONE,
  locationOf,
  locOffset,
  locSegment,
  NO_EXPIRY,
  RECORD_HEADER_BYTES,
  recordBytes,
} from './arena.js';
import { HashTable, SLOT_BYTES } from './hash-table.js';

/** A table and an arena holding records of string keys, placed as the map places them (hash given, or the key's). */
class Fixture {
  readonly arena = new Arena();
  readonly table: HashTable;
  readonly hasher = new KeyHasher();

  constructor(capacity = 16) {
    this.table = new HashTable(capacity);
  }

  /** Writes `key`'s record and points the first free slot of its probe path (from hash `h`) at it; the slot. */
  add(key: string, h = this.hash(key)): number {
    const len = utf8Length(key);
    const loc = this.arena.alloc(recordBytes(len, 0));
    const seg = locSegment(loc);
    const off = locOffset(loc);
    this.arena.writeHeader(seg, off, len, 0, 1, NO_EXPIRY);
    writeUtf8(key, this.arena.u8[seg]!, off + RECORD_HEADER_BYTES);
    const i = this.table.freeSlotFor(h);
    this.table.slots[i * 2] = h;
    this.table.slots[i * 2 + 1] = loc;
    this.table.live++;
    return i;
  }

  hash(key: string): number {
    return this.hasher.hashString(key);
  }

  /** findString of `key` as the map calls it (hashing first), with hash `h` instead when given. */
  find(key: string, h?: number): number {
    const own = this.hasher.hashString(key);
    return this.table.findString(h ?? own, key, this.hasher, this.arena);
  }

  findBytes(key: string, h?: number): number {
    const b = Buffer.from(key);
    return this.table.findBytes(h ?? hashBytes(b, 0, b.length), b, 0, b.length, this.arena);
  }

  remove(slot: number): void {
    this.table.slots[slot * 2 + 1] = LOC_TOMBSTONE;
    this.table.live--;
    this.table.tombstones++;
  }
}

describe('HashTable', () => {
  it('is capacity slots of two words each', () => {
    const t = new HashTable(64);
    expect(t.sab.byteLength).toBe(64 * SLOT_BYTES);
    expect([t.capacity, t.mask, t.live, t.tombstones]).toEqual([64, 63, 0, 0]);
  });

  it('finds keys by hash, then by their bytes: string and byte lookups agree', () => {
    const f = new Fixture();
    const keys = ['a', 'user:1', 'ünïcødé', '🙂 emoji', 'x'.repeat(64), 'y'.repeat(65), ''];
    const slots = keys.map((k) => f.add(k));
    for (const [i, k] of keys.entries()) {
      expect(f.find(k)).toBe(slots[i]);
      expect(f.findBytes(k)).toBe(slots[i]);
    }
    for (const k of ['b', 'user:2', 'ünïcødè', 'x'.repeat(63), 'y'.repeat(66)]) {
      expect(f.find(k)).toBe(-1);
      expect(f.findBytes(k)).toBe(-1);
    }
  });

  it('tells apart keys with the same hash by their bytes (short ASCII, long and non-ASCII compares)', () => {
    const f = new Fixture();
    const h = 0x12345670; // home slot 0
    const same = ['abc', 'abd', 'z'.repeat(70), `${'z'.repeat(69)}y`, 'é', 'è'];
    const slots = same.map((k) => f.add(k, h));
    expect(slots).toEqual([0, 1, 2, 3, 4, 5]);
    for (const [i, k] of same.entries()) {
      expect(f.find(k, h)).toBe(i);
      expect(f.findBytes(k, h)).toBe(i);
    }
    expect(f.find('abe', h)).toBe(-1);
    expect(f.table.insertAt).toBe(6); // the empty slot that ended the probe
  });

  it('probes past tombstones, and offers the first one on the path for an insert', () => {
    const f = new Fixture();
    const h = 0x7000000e; // home slot 14: the probe wraps around the end of the table
    for (const k of ['k0', 'k1', 'k2', 'k3']) f.add(k, h);
    f.remove(15);
    f.remove(0);
    expect(f.find('k3', h)).toBe(1);
    expect(f.findBytes('k3', h)).toBe(1);
    expect(f.find('k4', h)).toBe(-1);
    expect(f.table.insertAt).toBe(15);
    expect(f.findBytes('k4', h)).toBe(-1);
    expect(f.table.insertAt).toBe(15);
    // freeSlotFor (moves between tables, loading) takes the first tombstone or empty slot too.
    expect(f.table.freeSlotFor(h)).toBe(15);
    expect(f.table.freeSlotFor(0x70000003)).toBe(3);
  });

  it('skips a slot naming a segment this arena has not mapped (a reader racing a write) instead of throwing', () => {
    const f = new Fixture();
    f.add('here');
    // A location in segment 5, which the arena does not have, under the hash of a key being looked up.
    const h = f.hash('missing');
    const i = f.table.freeSlotFor(h);
    f.table.slots[i * 2] = h;
    f.table.slots[i * 2 + 1] = locationOf(5, 64);
    expect(f.find('missing')).toBe(-1);
    expect(f.findBytes('missing')).toBe(-1);
    expect(f.find('here')).toBeGreaterThanOrEqual(0);
  });

  it('dumps every used slot, with what the caller says each location holds', () => {
    const f = new Fixture();
    const s = f.add('a', 0x0000000f);
    f.add('b', 0x0000000f);
    f.remove(s);
    expect(f.table.dump((loc) => ` at ${locOffset(loc)}`)).toBe(
      ['table capacity=16 live=1 tombstones=1', '  0: hash=0000000f seg=0 off=40 at 40', '  15: deleted'].join('\n'),
    );
  });
});
