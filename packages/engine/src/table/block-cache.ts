import { invalidArgument } from '../base/errors.js';
import type { Block } from './block.js';

/** Options of {@link BlockCache}. */
export interface BlockCacheOptions {
  /** Bytes of decoded blocks to keep. Default 8 MiB. 0 keeps nothing. */
  capacity?: number;
}

// Per-entry bookkeeping the cache charges on top of a block's bytes (the node, the Block, the Map slot), so that a
// cache of many tiny blocks still stays near its budget.
const ENTRY_OVERHEAD = 128;

class Node {
  fileNumber: number;
  offset: number;
  block: Block;
  charge: number;
  prev: Node | null = null;
  next: Node | null = null;
  constructor(fileNumber: number, offset: number, block: Block, charge: number) {
    this.fileNumber = fileNumber;
    this.offset = offset;
    this.block = block;
    this.charge = charge;
  }
}

/**
 * LRU cache of decoded blocks keyed by (file number, block offset), bounded by bytes, shared by every TableReader of
 * one engine. File numbers must identify files uniquely for the cache's lifetime (the engine never reuses one).
 *
 * Blocks are immutable, so a block that is evicted while a reader still holds it stays valid for that reader; eviction
 * only drops the cache's reference. A hit costs two small-integer Map lookups and a list splice, and allocates nothing.
 */
export class BlockCache {
  /** Capacity in bytes. */
  readonly capacity: number;
  // File number -> block offset -> node. Two small-integer lookups rather than one packed key: a packed
  // (file, offset) number would exceed V8's small-integer range and box a heap number on every lookup.
  private readonly files = new Map<number, Map<number, Node>>();
  private count = 0;
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
    this.head = new Node(-1, -1, null as unknown as Block, 0);
    this.head.prev = this.head;
    this.head.next = this.head;
  }

  /** The cached block at (fileNumber, offset), marked most recently used; undefined on a miss. */
  get(fileNumber: number, offset: number): Block | undefined {
    const node = this.files.get(fileNumber)?.get(offset);
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
    const old = this.files.get(fileNumber)?.get(offset);
    if (old !== undefined) this.remove(old);
    let blocks = this.files.get(fileNumber);
    const charge = block.charge + ENTRY_OVERHEAD;
    if (charge > this.capacity) return;
    if (blocks === undefined) {
      blocks = new Map();
      this.files.set(fileNumber, blocks);
    }
    const node = new Node(fileNumber, offset, block, charge);
    blocks.set(offset, node);
    this.count++;
    this.pushFront(node);
    this.used += charge;
    while (this.used > this.capacity) this.remove(this.head.prev!);
  }

  /** Drops every block of `fileNumber` (a table that was deleted). */
  evictFile(fileNumber: number): void {
    const blocks = this.files.get(fileNumber);
    if (blocks === undefined) return;
    for (const node of blocks.values()) {
      this.unlink(node);
      this.used -= node.charge;
    }
    this.count -= blocks.size;
    this.files.delete(fileNumber);
  }

  /** Drops everything. */
  clear(): void {
    this.files.clear();
    this.count = 0;
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
    return this.count;
  }

  /** Hit and miss counts since creation, for tests and stats. */
  stats(): { hits: number; misses: number; blocks: number; usage: number; capacity: number } {
    return {
      hits: this.hitCount,
      misses: this.missCount,
      blocks: this.count,
      usage: this.used,
      capacity: this.capacity,
    };
  }

  private remove(node: Node): void {
    this.unlink(node);
    const blocks = this.files.get(node.fileNumber)!;
    blocks.delete(node.offset);
    if (blocks.size === 0) this.files.delete(node.fileNumber);
    this.count--;
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
