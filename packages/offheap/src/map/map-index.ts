/**
 * The map's index: the hash table inserts go to, and while it grows the table being drained into it, with the key
 * lookup over both and the incremental move between them.
 *
 * Growth. When an insert would take the used slots (live + tombstones) past 3/4 of the table, a new table sized for
 * the live entries starts (which also drops the tombstones); from then on inserts go to the new table, lookups try
 * the new one then the old one, and every insert moves a batch of old slots, sized so the old table is empty before
 * the new one can fill. No insert pays for a whole rehash. A slot moves under its key's stripe lock, so a reader
 * sees the key in one table or the other.
 */

import { invalidArgument } from '../errors.js';
import { hashBytes, KeyHasher } from '../key-bytes.js';
import type { Arena } from '../memory/arena.js';
import { LOC_TOMBSTONE, locOffset, locSegment, RECORD_HEADER_BYTES } from '../memory/arena.js';
import { HashTable, SLOT_BYTES } from '../memory/hash-table.js';
import type { MapKey } from './map-options.js';
import type { Seqlock } from './seqlock.js';

/** Grow when used slots (live + tombstones) would pass 3/4 of the table: linear probing degrades fast beyond. */
const MAX_LOAD = 0.75;
/** A new table is the smallest power of two holding the live entries at most this full (so 3/8 after doubling). */
const SIZING_LOAD = 0.7;
const MIN_CAPACITY = 16;

/** Smallest power-of-two capacity holding `n` entries at SIZING_LOAD. */
export function capacityFor(n: number): number {
  let c = MIN_CAPACITY;
  while (c * SIZING_LOAD < n) c *= 2;
  return c;
}

/**
 * What `MapIndex.find` learns of a key besides its slot: the table it was found in, its hash and UTF-8 length, and
 * in `hasher` a short ASCII key's words (for the compare, and for the copy into a new record). Each caller of `find`
 * owns one and reuses it, so a lookup allocates nothing; it describes the last key looked up through it.
 */
export class KeyProbe {
  readonly hasher = new KeyHasher();
  /** The table the key was found in (valid after a `find` that found it). */
  table: HashTable;
  hash = 0;
  keyLength = 0;

  constructor(table: HashTable) {
    this.table = table;
  }

  /** The record location in `slot` of the table the key was found in. */
  location(slot: number): number {
    return this.table.slots[slot * 2 + 1]!;
  }
}

export class MapIndex {
  /** The table inserts go to. */
  table: HashTable;
  /** The table being drained into `table` while the index grows, else null. */
  old: HashTable | null = null;
  /** Keys in the index (live slots of both tables). */
  count = 0;
  /** Parallel scans running: they name tables by buffer, so the old table is not drained under them. */
  pins = 0;
  private migrateCursor = 0;
  private migrateBatch = 0;

  constructor(
    private readonly arena: Arena,
    private readonly seqlock: Seqlock,
    readonly keysAreStrings: boolean,
    capacity: number,
  ) {
    this.table = new HashTable(capacity);
  }

  /** A probe for `find`, for one caller to own. */
  probe(): KeyProbe {
    return new KeyProbe(this.table);
  }

  /**
   * Slot of `key`, with its table, hash and UTF-8 length in `probe`; or -1 (then `table.insertAt` is where an
   * insert of it goes, unless the index grows first). Throws INVALID_ARGUMENT for a key of the wrong kind or with a
   * lone surrogate.
   */
  find(key: MapKey, probe: KeyProbe): number {
    let slot: number;
    if (this.keysAreStrings) {
      if (typeof key !== 'string') throw invalidArgument(`this map has string keys, got ${typeof key}`);
      const hasher = probe.hasher;
      const h = hasher.hashString(key);
      probe.hash = h;
      probe.keyLength = hasher.byteLength;
      slot = this.table.findString(h, key, hasher, this.arena);
      if (slot >= 0) {
        probe.table = this.table;
        return slot;
      }
      if (this.old === null) return -1;
      slot = this.old.findString(h, key, hasher, this.arena);
    } else {
      if (!(key instanceof Uint8Array)) throw invalidArgument('this map has Uint8Array keys');
      const len = key.length;
      const h = hashBytes(key, 0, len);
      probe.hash = h;
      probe.keyLength = len;
      slot = this.table.findBytes(h, key, 0, len, this.arena);
      if (slot >= 0) {
        probe.table = this.table;
        return slot;
      }
      if (this.old === null) return -1;
      slot = this.old.findBytes(h, key, 0, len, this.arena);
    }
    if (slot >= 0) probe.table = this.old;
    return slot;
  }

  /**
   * `find` for a key given as the engine holds it, `engineKey`: the namespace byte, then the key's bytes (UTF-8 for
   * a string key, which hashes and compares like its string). No string is made and nothing is checked.
   */
  findEngineKey(engineKey: Uint8Array, probe: KeyProbe): number {
    const len = engineKey.length - 1;
    const h = hashBytes(engineKey, 1, len);
    probe.hash = h;
    probe.keyLength = len;
    let slot = this.table.findBytes(h, engineKey, 1, len, this.arena);
    if (slot >= 0) {
      probe.table = this.table;
      return slot;
    }
    if (this.old === null) return -1;
    slot = this.old.findBytes(h, engineKey, 1, len, this.arena);
    if (slot >= 0) probe.table = this.old;
    return slot;
  }

  /** True if one more key would take the insert table past its load limit: `grow()` first. */
  full(): boolean {
    const t = this.table;
    return t.live + t.tombstones + 1 > t.capacity * MAX_LOAD;
  }

  /**
   * Starts moving the index to a fresh table sized for the live entries, finishing a previous growth first. The
   * layout changed: the caller publishes it before the next insert.
   */
  grow(): void {
    this.finishGrowth();
    const capacity = capacityFor(this.count + 1);
    this.old = this.table;
    this.table = new HashTable(capacity);
    this.migrateCursor = 0;
    // Drain the old table before the new one can fill: that takes at least `headroom` inserts.
    const headroom = Math.max(1, Math.floor(capacity * MAX_LOAD) - this.count - 1);
    this.migrateBatch = 4 + Math.ceil(this.old.capacity / headroom);
  }

  /**
   * Moves the next batch of old slots (the one insert's share, unless a scan pins the tables); true if that retired
   * the old table, a layout change the caller publishes.
   */
  migrateStep(): boolean {
    return this.old !== null && this.pins === 0 && this.migrate(this.migrateBatch);
  }

  /** Moves every slot left in the old table (before an image is written, or a new growth); true if there was one. */
  finishGrowth(): boolean {
    return this.old !== null && this.migrate(this.old.capacity);
  }

  /**
   * Points a free slot of the insert table at `loc` for a key of hash `h` that is not in the index: `insertAt` of
   * the `find` just made, or with `seek` the first free slot on the key's path (after growth, or at load).
   */
  insert(h: number, loc: number, seek: boolean): void {
    const t = this.table;
    const i = seek ? t.freeSlotFor(h) : t.insertAt;
    if (t.slots[i * 2 + 1] === LOC_TOMBSTONE) t.tombstones--;
    this.seqlock.lock(h);
    t.slots[i * 2] = h;
    t.slots[i * 2 + 1] = loc;
    this.seqlock.unlock(h);
    t.live++;
    this.count++;
    this.seqlock.setSize(this.count);
  }

  /**
   * Turns `slot` of the table `probe` found its key in (by the `find` just made) into a tombstone, under the key's
   * lock, and frees its block.
   */
  remove(slot: number, probe: KeyProbe): void {
    const t = probe.table;
    const h = probe.hash;
    this.seqlock.lock(h);
    const loc = t.slots[slot * 2 + 1]!;
    t.slots[slot * 2 + 1] = LOC_TOMBSTONE;
    this.arena.free(loc);
    this.seqlock.unlock(h);
    t.live--;
    t.tombstones++;
    this.count--;
    this.seqlock.setSize(this.count);
  }

  /** The tables to visit for every key: the old one first while growing. */
  tables(): HashTable[] {
    return this.old === null ? [this.table] : [this.old, this.table];
  }

  /** Takes the table of a map image (a fresh index only). */
  restore(table: HashTable, count: number): void {
    this.table = table;
    this.count = count;
  }

  /** Bytes of both tables. */
  get bytes(): number {
    return this.table.capacity * SLOT_BYTES + (this.old === null ? 0 : this.old.capacity * SLOT_BYTES);
  }

  /** Tombstones of both tables. */
  get tombstones(): number {
    return this.table.tombstones + (this.old === null ? 0 : this.old.tombstones);
  }

  /** The tables as text (every used slot: small maps only), each live slot with its key. */
  dump(): string {
    const describe = (loc: number): string => ` key=${this.keyText(loc)}`;
    const parts = [this.table.dump(describe)];
    if (this.old !== null) parts.push(`draining from slot ${this.migrateCursor}:`, this.old.dump(describe));
    return parts.join('\n');
  }

  /** The key of the record at `loc`, as text: a string key as it is, a byte key in hex. */
  private keyText(loc: number): string {
    const seg = locSegment(loc);
    const off = locOffset(loc);
    const start = off + RECORD_HEADER_BYTES;
    const end = start + this.arena.keyLength(seg, off);
    return this.arena.u8[seg]!.toString(this.keysAreStrings ? 'utf8' : 'hex', start, end);
  }

  /** Moves up to `n` slots of the old table to the new one; true if that emptied and retired the old table. */
  private migrate(n: number): boolean {
    const old = this.old!;
    const t = this.table;
    const end = Math.min(old.capacity, this.migrateCursor + n);
    const from = old.slots;
    const fromHashes = old.hashes;
    const to = t.slots;
    for (let i = this.migrateCursor; i < end; i++) {
      const loc = from[i * 2 + 1]!;
      if (loc <= LOC_TOMBSTONE) continue;
      const h = fromHashes[i * 2]!;
      const j = t.freeSlotFor(h);
      if (to[j * 2 + 1] === LOC_TOMBSTONE) t.tombstones--;
      this.seqlock.lock(h);
      to[j * 2] = h;
      to[j * 2 + 1] = loc;
      from[i * 2 + 1] = LOC_TOMBSTONE;
      this.seqlock.unlock(h);
      t.live++;
      old.live--;
      old.tombstones++;
    }
    this.migrateCursor = end;
    if (end < old.capacity) return false;
    this.old = null;
    return true;
  }
}
