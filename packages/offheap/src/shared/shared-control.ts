/**
 * The control block shared by a map's owner and every attached reader: one Int32Array over a SharedArrayBuffer.
 *
 *   word 0        layout generation: bumped (after the new layout was posted to every reader's port) whenever a
 *                 table or segment is added or retired, or the msgpackr structures grow
 *   word 1        closed flag: 1 once the owner closed the map
 *   word 2        number of entries
 *   words 3..15   reserved (zero)
 *   words 16..    4096 sequence counters ("stripes"); a key uses stripe `hash >>> 20`
 *
 * Seqlock protocol. Only the owner thread writes. Before it changes anything a reader could see for a key (its slot,
 * its record bytes, a slot it moves during growth, a block it frees or reuses), it makes the key's stripe odd with
 * an atomic add, and after the change even again. A reader loads the stripe (retrying while odd), then the layout
 * generation (refreshing its layout if it moved), copies what it needs, and accepts the copy only if both words
 * still hold what it loaded first; otherwise it retries. Freed space is reused only by a later write, which bumps
 * the stripe of the key that freed it first, so a reader racing with reuse always sees a changed stripe.
 */
export const CTRL_LAYOUT_GENERATION = 0;
export const CTRL_CLOSED = 1;
export const CTRL_SIZE = 2;
const STRIPES_BASE = 16;
const STRIPE_BITS = 12;
export const STRIPE_COUNT = 1 << STRIPE_BITS;
export const CONTROL_BYTES = (STRIPES_BASE + STRIPE_COUNT) * 4;

/** Index in the control block of the stripe counter guarding keys with hash `h`. */
export function stripeOf(h: number): number {
  return STRIPES_BASE + (h >>> (32 - STRIPE_BITS));
}

/** A new zeroed control block. */
export function createControl(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(CONTROL_BYTES));
}
