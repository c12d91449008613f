/**
 * Random existing keys for the measured loops, built before timing starts so that no system pays for formatting
 * keys inside its loop. Every system draws the same keys in the same order (one fixed xorshift32 seed).
 */
import { Xorshift32 } from '../harness/xorshift32.js';
import { keyOf } from './cases.js';

/** Keys in the pool: a power of two (the cursor wraps with a mask), far more than any batch holds. */
const POOL_SIZE = 1 << 16;
const SEED = 0x5e7e_0003;

/** A ring of random keys among `key:0…` to `key:<records - 1>`. */
export class KeyPool {
  private readonly keys: string[];
  private cursor = 0;

  constructor(records: number) {
    const random = new Xorshift32(SEED);
    this.keys = Array.from({ length: POOL_SIZE }, () => keyOf(random.below(records)));
  }

  /** The next key of the ring. */
  next(): string {
    const key = this.keys[this.cursor]!;
    this.cursor = (this.cursor + 1) & (POOL_SIZE - 1);
    return key;
  }
}
