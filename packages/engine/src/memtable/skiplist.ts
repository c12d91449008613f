/**
 * The memtable's skiplist (memtable.ts adds its point-get index, sharing and reuse): internal keys whose nodes live
 * in one Uint32Array and whose keys and values live in one byte arena (ArrayBuffers, off the JS heap). No JS object
 * per entry: the heap holds a handful of objects however many entries there are. A node's word offsets are private to
 * this file, so that the hot loops read constants of their own module.
 *
 * Layout (FORMAT.md "Memtable", in memory only):
 *
 *   byte arena entry = user key | trailer (8, big-endian seq << 8 | kind) | value       (the first two = internal key)
 *   node (u32 words) = entryOffset | keyLength | valueLength | trailerHi | trailerLo | height | prefixHi | prefixLo
 *                      | next[height]
 *
 * `prefixHi:prefixLo` are the user key's first 8 bytes, big-endian, zero-padded: a search compares them from the
 * node it already reads, and reads the key's bytes (another cache line, anywhere in the arena) only when they tie.
 *
 * `next` holds word offsets of successor nodes; 0 means none (the head node sits at word 0 and is never a successor).
 * Writers are single-threaded (the engine's event loop) and a shared copy is never written, so no Atomics are needed.
 */

import { TRAILER_SIZE, ValueKind } from '../base/internal-key.js';

/** Tallest a node may be. */
export const MAX_HEIGHT = 12;
/** Words of a node before its `next` array. */
export const NODE_FIXED = 8;
// Word offsets inside a node.
const OFF = 0;
const KLEN = 1;
const VLEN = 2;
const THI = 3;
const TLO = 4;
const HEIGHT = 5;
const P_HI = 6;
const P_LO = 7;
const NEXT = 8;

/** Counts of an arena copy (see `SharedMemtable`): how much of it is used. */
export interface ArenaUse {
  bytesUsed: number;
  nodesUsed: number;
  count: number;
}

export class SkipList {
  readonly bytes: Uint8Array;
  readonly nodes: Uint32Array;
  protected bytesUsed: number;
  protected nodesUsed: number;
  /** Number of entries. */
  count: number;
  private maxHeight = 1;
  private rng = 0x2545f491;
  /** The node `add` inserted last (0: none), for the sequential-insert hint. */
  private lastInserted = 0;
  /** Scratch: the rightmost node before the insert point at each level. */
  private readonly prev = new Uint32Array(MAX_HEIGHT);

  /**
   * A list over the arenas `bytes` and `nodes`: empty (its head node zeroed here, the rest written before it is
   * read), or with `used`, a copy holding that much.
   */
  constructor(bytes: Uint8Array, nodes: Uint32Array, used?: ArenaUse) {
    this.bytes = bytes;
    this.nodes = nodes;
    if (used) {
      this.bytesUsed = used.bytesUsed;
      this.nodesUsed = used.nodesUsed;
      this.count = used.count;
      return;
    }
    nodes.fill(0, 0, NODE_FIXED + MAX_HEIGHT);
    nodes[HEIGHT] = MAX_HEIGHT;
    this.bytesUsed = 0;
    this.nodesUsed = NODE_FIXED + MAX_HEIGHT;
    this.count = 0;
  }

  /** Bytes of arena in use (entries and nodes): what counts against the write buffer size. */
  get memoryUsage(): number {
    return this.bytesUsed + this.nodesUsed * 4;
  }

  /** Bytes the arenas reserve. */
  get capacity(): number {
    return this.bytes.length + this.nodes.length * 4;
  }

  /** True if an entry with these key and value lengths fits. */
  hasRoom(keyLength: number, valueLength: number): boolean {
    return (
      this.bytesUsed + keyLength + TRAILER_SIZE + valueLength <= this.bytes.length &&
      this.nodesUsed + NODE_FIXED + MAX_HEIGHT <= this.nodes.length
    );
  }

  /**
   * True if a write batch of `batchBytes` encoded bytes holding `entries` entries fits: each entry's key and value
   * take at most its encoded size plus a trailer, and a node at most NODE_FIXED + MAX_HEIGHT words.
   */
  hasRoomFor(batchBytes: number, entries: number): boolean {
    return (
      this.bytesUsed + batchBytes + TRAILER_SIZE * entries <= this.bytes.length &&
      this.nodesUsed + (NODE_FIXED + MAX_HEIGHT) * entries <= this.nodes.length
    );
  }

  /** Smallest capacity for which `hasRoom(keyLength, valueLength)` holds on an empty memtable. */
  static capacityFor(keyLength: number, valueLength: number): number {
    return keyLength + TRAILER_SIZE + valueLength + 4 * (NODE_FIXED + MAX_HEIGHT) * 4 + 64;
  }

  /** A capacity for which `hasRoomFor(batchBytes, entries)` holds on an empty memtable. */
  static capacityForBatch(batchBytes: number, entries: number): number {
    return Math.max(batchBytes + TRAILER_SIZE * entries, 4 * (NODE_FIXED + MAX_HEIGHT) * (entries + 1)) + 64;
  }

  private randomHeight(): number {
    // xorshift32; a new level with probability 1/4, as in LevelDB.
    let x = this.rng;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.rng = x;
    let h = 1;
    while (h < MAX_HEIGHT && (x & 3) === 0) {
      h++;
      x >>>= 2;
    }
    return h;
  }

  /**
   * Compares node `n` with the internal key (src[ks, ks+kl), trailer thi:tlo) whose first 8 bytes are `khi:klo`
   * (`prefixWords`): the prefixes decide unless they tie.
   */
  private compareNode(
    n: number,
    src: Uint8Array,
    ks: number,
    kl: number,
    thi: number,
    tlo: number,
    khi: number,
    klo: number,
  ): number {
    const nodes = this.nodes;
    const phi = nodes[n + P_HI]!;
    if (phi !== khi) return phi < khi ? -1 : 1;
    const plo = nodes[n + P_LO]!;
    if (plo !== klo) return plo < klo ? -1 : 1;
    const bytes = this.bytes;
    const off = nodes[n + OFF]!;
    const nl = nodes[n + KLEN]!;
    const m = Math.min(nl, kl);
    // Equal prefixes: the keys' bytes agree up to 8 or the shorter one's end (where zero padding may have tied).
    for (let i = 8; i < m; i++) {
      const d = bytes[off + i]! - src[ks + i]!;
      if (d !== 0) return d;
    }
    if (nl !== kl) return nl - kl;
    const nhi = nodes[n + THI]!;
    if (nhi !== thi) return nhi > thi ? -1 : 1;
    const nlo = nodes[n + TLO]!;
    return nlo === tlo ? 0 : nlo > tlo ? -1 : 1;
  }

  /**
   * First node >= the internal key, or 0. When `fillPrev`, records the predecessor at every level in `prev`.
   */
  private findGreaterOrEqual(
    src: Uint8Array,
    ks: number,
    kl: number,
    thi: number,
    tlo: number,
    fillPrev: boolean,
  ): number {
    const nodes = this.nodes;
    const khi = prefixWord(src, ks, kl, 0);
    const klo = prefixWord(src, ks, kl, 4);
    let x = 0;
    let level = this.maxHeight - 1;
    // A node found >= the key at one level is met again at lower levels: do not compare it twice (LevelDB's trick).
    let known = 0;
    for (;;) {
      const next = nodes[x + NEXT + level]!;
      if (next !== 0 && next !== known && this.compareNode(next, src, ks, kl, thi, tlo, khi, klo) < 0) {
        x = next;
      } else {
        if (fillPrev) this.prev[level] = x;
        if (level === 0) return next;
        known = next;
        level--;
      }
    }
  }

  /**
   * Adds an entry: key `src[ks, ks+kl)` with sequence `seq` and `kind`, and for a put the value `val[vs, vs+vl)`.
   * Requires `hasRoom(kl, vl)` and a sequence above every earlier one for that key.
   */
  add(
    seq: number,
    kind: ValueKind,
    src: Uint8Array,
    ks: number,
    kl: number,
    val: Uint8Array,
    vs: number,
    vl: number,
  ): void {
    const t = seq * 256 + kind;
    const thi = Math.floor(t / 0x1_0000_0000);
    const tlo = t >>> 0;
    const bytes = this.bytes;
    const off = this.bytesUsed;
    // Short keys and values are copied by hand: cheaper than making a subarray for set().
    if (kl <= 32) for (let i = 0; i < kl; i++) bytes[off + i] = src[ks + i]!;
    else bytes.set(src.subarray(ks, ks + kl), off);
    const tr = off + kl;
    bytes[tr] = thi >>> 24;
    bytes[tr + 1] = thi >>> 16;
    bytes[tr + 2] = thi >>> 8;
    bytes[tr + 3] = thi;
    bytes[tr + 4] = tlo >>> 24;
    bytes[tr + 5] = tlo >>> 16;
    bytes[tr + 6] = tlo >>> 8;
    bytes[tr + 7] = tlo;
    const vo = tr + TRAILER_SIZE;
    if (vl <= 32) for (let i = 0; i < vl; i++) bytes[vo + i] = val[vs + i]!;
    else bytes.set(val.subarray(vs, vs + vl), vo);
    this.bytesUsed = tr + TRAILER_SIZE + vl;

    // Sequential loads insert right after the previous insert: then `prev` is still right and two comparisons
    // replace the search. (After an insert, prev[i] below its height is that node; above it, unchanged and valid.)
    const last = this.lastInserted;
    const nodes = this.nodes;
    const khi = prefixWord(src, ks, kl, 0);
    const klo = prefixWord(src, ks, kl, 4);
    let hinted = false;
    if (last !== 0 && this.compareNode(last, src, ks, kl, thi, tlo, khi, klo) < 0) {
      const after = nodes[last + NEXT]!;
      hinted = after === 0 || this.compareNode(after, src, ks, kl, thi, tlo, khi, klo) > 0;
    }
    if (!hinted) this.findGreaterOrEqual(src, ks, kl, thi, tlo, true);
    const height = this.randomHeight();
    if (height > this.maxHeight) {
      for (let i = this.maxHeight; i < height; i++) this.prev[i] = 0;
      this.maxHeight = height;
    }
    const n = this.nodesUsed;
    nodes[n + OFF] = off;
    nodes[n + KLEN] = kl;
    nodes[n + VLEN] = vl;
    nodes[n + THI] = thi;
    nodes[n + TLO] = tlo;
    nodes[n + HEIGHT] = height;
    nodes[n + P_HI] = khi;
    nodes[n + P_LO] = klo;
    for (let i = 0; i < height; i++) {
      const p = this.prev[i]!;
      nodes[n + NEXT + i] = nodes[p + NEXT + i]!;
      nodes[p + NEXT + i] = n;
      this.prev[i] = n;
    }
    this.lastInserted = n;
    this.nodesUsed = n + NODE_FIXED + height;
    this.count++;
  }

  /** @internal Whether node `n`'s user key is `src[ks, ks+kl)`. */
  sameUserKey(n: number, src: Uint8Array, ks: number, kl: number): boolean {
    const nodes = this.nodes;
    if (nodes[n + KLEN] !== kl) return false;
    const off = nodes[n + OFF]!;
    const bytes = this.bytes;
    for (let i = 0; i < kl; i++) if (bytes[off + i] !== src[ks + i]) return false;
    return true;
  }

  /** @internal The sequence of node `n`'s entry. */
  nodeSequence(n: number): number {
    return Math.floor((this.nodes[n + THI]! * 0x1_0000_0000 + this.nodes[n + TLO]!) / 256);
  }

  /** @internal The first node at or after (user key, `seq`): the key's newest entry `seq` sees, a later key, or 0. */
  seekVisible(src: Uint8Array, ks: number, kl: number, seq: number): number {
    // Seek to (key, seq, highest kind): the first entry at or below the snapshot.
    const t = seq * 256 + ValueKind.Value;
    return this.findGreaterOrEqual(src, ks, kl, Math.floor(t / 0x1_0000_0000), t >>> 0, false);
  }

  /** @internal Whether node `n`'s entry is a deletion. */
  isDeletion(n: number): boolean {
    return (this.nodes[n + TLO]! & 0xff) === ValueKind.Deletion;
  }

  /** @internal Length of node `n`'s user key. */
  userKeyLengthOf(n: number): number {
    return this.nodes[n + KLEN]!;
  }

  /** @internal The node laid out after node `n` in the arena (nodes are laid out in insertion order). */
  nodeInArenaAfter(n: number): number {
    return n + NODE_FIXED + this.nodes[n + HEIGHT]!;
  }

  /** @internal for the iterator */
  nodeAfter(n: number): number {
    return this.nodes[n + NEXT]!;
  }

  /** @internal Last node < the internal key `ikey`, or 0 (head). */
  nodeBefore(ikey: Uint8Array): number {
    const kl = ikey.length - TRAILER_SIZE;
    const thi = readU32BE(ikey, kl);
    const tlo = readU32BE(ikey, kl + 4);
    const nodes = this.nodes;
    const khi = prefixWord(ikey, 0, kl, 0);
    const klo = prefixWord(ikey, 0, kl, 4);
    let x = 0;
    let level = this.maxHeight - 1;
    for (;;) {
      const next = nodes[x + NEXT + level]!;
      if (next !== 0 && this.compareNode(next, ikey, 0, kl, thi, tlo, khi, klo) < 0) {
        x = next;
      } else {
        if (level === 0) return x;
        level--;
      }
    }
  }

  /** @internal First node >= the internal key `ikey`, or 0. */
  nodeAtOrAfter(ikey: Uint8Array): number {
    const kl = ikey.length - TRAILER_SIZE;
    return this.findGreaterOrEqual(ikey, 0, kl, readU32BE(ikey, kl), readU32BE(ikey, kl + 4), false);
  }

  /** @internal The last node, or 0 when empty. */
  lastNode(): number {
    const nodes = this.nodes;
    let x = 0;
    for (let level = this.maxHeight - 1; level >= 0; level--) {
      for (let next = nodes[x + NEXT + level]!; next !== 0; next = nodes[x + NEXT + level]!) x = next;
    }
    return x;
  }

  /** @internal Where node `n`'s internal key starts in `bytes`; its value follows the key. */
  keyOffsetOf(n: number): number {
    return this.nodes[n + OFF]!;
  }

  /** @internal Length of node `n`'s internal key (user key + trailer). */
  keyLengthOf(n: number): number {
    return this.nodes[n + KLEN]! + TRAILER_SIZE;
  }

  /** @internal Length of node `n`'s value. */
  valueLengthOf(n: number): number {
    return this.nodes[n + VLEN]!;
  }

  /** @internal The internal key of node `n`, as a view into the arena. */
  keyOf(n: number): Uint8Array {
    const off = this.nodes[n + OFF]!;
    return this.bytes.subarray(off, off + this.nodes[n + KLEN]! + TRAILER_SIZE);
  }

  /** @internal The value of node `n`, as a view into the arena. */
  valueOf(n: number): Uint8Array {
    const off = this.nodes[n + OFF]! + this.nodes[n + KLEN]! + TRAILER_SIZE;
    return this.bytes.subarray(off, off + this.nodes[n + VLEN]!);
  }

  /** A debug dump for tests: `key@seq=value` or `key@seq DEL`, in order (keys and values as latin1). */
  dump(): string[] {
    const out: string[] = [];
    for (let n = this.nodeAfter(0); n !== 0; n = this.nodeAfter(n)) {
      const k = this.keyOf(n);
      const kl = k.length - TRAILER_SIZE;
      const t = readU32BE(k, kl) * 0x1_0000_0000 + readU32BE(k, kl + 4);
      const head = `${Buffer.from(k.subarray(0, kl)).toString('latin1')}@${Math.floor(t / 256)}`;
      out.push(
        t % 256 === ValueKind.Value ? `${head}=${Buffer.from(this.valueOf(n)).toString('latin1')}` : `${head} DEL`,
      );
    }
    return out;
  }
}

/**
 * Bytes `at` to `at + 3` of the key `src[ks, ks+kl)` as a big-endian u32, zero past its end: compared as numbers, two
 * such words order keys as their bytes do, except that a tie says nothing (a key may end inside the padding).
 */
function prefixWord(src: Uint8Array, ks: number, kl: number, at: number): number {
  if (kl >= at + 4) {
    const p = ks + at;
    return ((src[p]! << 24) | (src[p + 1]! << 16) | (src[p + 2]! << 8) | src[p + 3]!) >>> 0;
  }
  let w = 0;
  for (let i = 0; i < 4; i++) w = (w << 8) | (at + i < kl ? src[ks + at + i]! : 0);
  return w >>> 0;
}

function readU32BE(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
}
