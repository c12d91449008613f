import type { Block } from './block.js';
import { invalidArgument } from './errors.js';

/** Options of {@link BlockCache}. */
export interface BlockCacheOptions {
  /** Bytes of decoded blocks to keep. Default 8 MiB. 0 keeps nothing. */
  capacity?: number;
}

// Per-entry bookkeeping the cache charges on top of a block's bytes (the node, the Block, the Map slot), so that a
// cache of many tiny blocks still stays near its budget.
const ENTRY_OVERHEAD = 128;

// Keys pack (fileNumber, offset) into one number: offset < 2^32 (tables are below 4 GiB) and fileNumber < 2^21.
const OFFSET_SPAN = 0x1_0000_0000;

class Node {
  key: number;
  block: Block;
  charge: number;
  prev: Node | null = null;
  next: Node | null = null;
  constructor(key: number, block: Block, charge: number) {
    this.key = key;
    this.block = block;
    this.charge = charge;
  }
}

/**
 * LRU cache of decoded blocks keyed by (file number, block offset), bounded by bytes, shared by every TableReader of
 * one engine. File numbers must identify files uniquely for the cache's lifetime (the engine never reuses one).
 *
 * Blocks are immutable, so a block that is evicted while a reader still holds it stays valid for that reader; eviction
 * only drops the cache's reference. A hit costs one Map lookup and a list splice, and allocates nothing.
 */
export class BlockCache {
  /** Capacity in bytes. */
  readonly capacity: number;
  private readonly map = new Map<number, Node>();
  // Sentinel of the circular LRU list: head.next is the most recently used, head.prev the least.
  private readonly head: Node;
  private used = 0;
  private hitCount = 0;
  private missCount = 0;

  constructor(options: BlockCacheOptions = {}) {
    const capacity = options.capacity ?? 8 * 1024 * 1024;
    if (!Number.isFinite(capacity) || capacity < 0)
      throw invalidArgument(`block cache capacity must be >= 0, got ${capacity}`);
    this.capacity = capacity;
    this.head = new Node(-1, null as unknown as Block, 0);
    this.head.prev = this.head;
    this.head.next = this.head;
  }

  /** The cached block at (fileNumber, offset), marked most recently used; undefined on a miss. */
  get(fileNumber: number, offset: number): Block | undefined {
    const node = this.map.get(fileNumber * OFFSET_SPAN + offset);
    if (node === undefined) {
      this.missCount++;
      return undefined;
    }
    this.hitCount++;
    this.unlink(node);
    this.pushFront(node);
    return node.block;
  }

  /** Caches `block` at (fileNumber, offset), replacing any block there, then evicts least recently used blocks. */
  insert(fileNumber: number, offset: number, block: Block): void {
    const key = fileNumber * OFFSET_SPAN + offset;
    const old = this.map.get(key);
    if (old !== undefined) this.remove(old);
    const charge = block.charge + ENTRY_OVERHEAD;
    if (charge > this.capacity) return;
    const node = new Node(key, block, charge);
    this.map.set(key, node);
    this.pushFront(node);
    this.used += charge;
    while (this.used > this.capacity) this.remove(this.head.prev!);
  }

  /** Drops every block of `fileNumber` (a table that was deleted). Walks the whole cache: call it per file deletion. */
  evictFile(fileNumber: number): void {
    let node = this.head.next!;
    while (node !== this.head) {
      const next = node.next!;
      if (Math.floor(node.key / OFFSET_SPAN) === fileNumber) this.remove(node);
      node = next;
    }
  }

  /** Drops everything. */
  clear(): void {
    this.map.clear();
    this.head.prev = this.head;
    this.head.next = this.head;
    this.used = 0;
  }

  /** Bytes charged by the blocks held now (block bytes plus a fixed per-entry overhead). */
  get usage(): number {
    return this.used;
  }

  /** Number of blocks held. */
  get size(): number {
    return this.map.size;
  }

  /** Hit and miss counts since creation, for tests and stats. */
  stats(): { hits: number; misses: number; blocks: number; usage: number; capacity: number } {
    return {
      hits: this.hitCount,
      misses: this.missCount,
      blocks: this.map.size,
      usage: this.used,
      capacity: this.capacity,
    };
  }

  private remove(node: Node): void {
    this.unlink(node);
    this.map.delete(node.key);
    this.used -= node.charge;
  }

  private unlink(node: Node): void {
    node.prev!.next = node.next;
    node.next!.prev = node.prev;
  }

  private pushFront(node: Node): void {
    const head = this.head;
    node.prev = head;
    node.next = head.next;
    head.next!.prev = node;
    head.next = node;
  }
}
