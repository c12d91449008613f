import { CTRL_SIZE, createControl, stripeOf } from '../shared/shared-control.js';

/**
 * The control block and its stripe counters, from the owner's side. Until the map is first shared no reader can
 * exist, so every method is a no-op then: a map that is never shared pays one field load per change.
 */
export class Seqlock {
  readonly control: Int32Array = createControl();
  /** True once the map was shared. */
  active = false;

  /** Before a change readers of keys of hash `h` could see: their stripe goes odd. */
  lock(h: number): void {
    if (this.active) Atomics.add(this.control, stripeOf(h), 1);
  }

  /** After the change: the stripe is even again, and moved, so a reader that copied meanwhile retries. */
  unlock(h: number): void {
    if (this.active) Atomics.add(this.control, stripeOf(h), 1);
  }

  /** Publishes the entry count (what a reader's `size` reads). */
  setSize(entries: number): void {
    if (this.active) Atomics.store(this.control, CTRL_SIZE, entries);
  }
}
