/**
 * A tiny deterministic pseudo-random sequence (Marsaglia's xorshift32), so that every system's random-get phase
 * reads exactly the same keys in the same order. Not for anything that needs real randomness.
 */
export class Xorshift32 {
  private state: number;

  /** `seed` must not be 0 (xorshift would stay at 0 forever); 0 is replaced by a fixed odd constant. */
  constructor(seed: number) {
    this.state = seed >>> 0 || 0x9e3779b9;
  }

  /** Next 32-bit unsigned value. */
  next(): number {
    let x = this.state;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.state = x >>> 0;
    return this.state;
  }

  /** Next integer in [0, bound); the modulo bias is below bound / 2^32, negligible for benchmark sizes. */
  below(bound: number): number {
    return this.next() % bound;
  }
}
