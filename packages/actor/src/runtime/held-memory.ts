/**
 * What a sink really holds while its peer has not read what it was pushed: not the bytes of the views it keeps, but
 * the whole memory behind them (a view of 30 bytes keeps its 64 KiB page, or the 8 KiB pool slab of a small Buffer,
 * alive), counted once per ArrayBuffer however many views share it, plus what each message in flight costs the socket
 * beside its bytes (frame headers, write requests, callbacks).
 */

/**
 * What one message in flight costs beside the memory of its bytes: its head and frame headers (slices of pool slabs),
 * the socket's queued write requests and the callback that says it was written. Measured with ws 8 as the growth of
 * RSS per message of two fragments to a peer that does not read: about 850 bytes on Node 20, 1,050 on Node 26 and
 * 1,330 on Node 24 (700 of them JS heap), rounded up from the largest.
 */
export const MESSAGE_COST = 1536;

export class HeldMemory {
  /** Views held per ArrayBuffer. */
  readonly #views = new Map<ArrayBufferLike, number>();
  /** Messages in flight. */
  #messages = 0;
  /** Bytes of the ArrayBuffers held. */
  #bytes = 0;

  /** Bytes held: the ArrayBuffers behind the views, and MESSAGE_COST per message in flight. */
  get bytes(): number {
    return this.#bytes + this.#messages * MESSAGE_COST;
  }

  /** A message of these views goes out: they are held until `release` of the same views. */
  hold(a: Uint8Array, b?: Uint8Array): void {
    this.#messages++;
    this.#add(a);
    if (b !== undefined) this.#add(b);
  }

  /** The message `hold` was given these views for was written (or will never be). */
  release(a: Uint8Array, b?: Uint8Array): void {
    this.#messages--;
    this.#remove(a);
    if (b !== undefined) this.#remove(b);
  }

  #add(v: Uint8Array): void {
    const n = this.#views.get(v.buffer);
    if (n === undefined) {
      this.#views.set(v.buffer, 1);
      this.#bytes += v.buffer.byteLength;
    } else this.#views.set(v.buffer, n + 1);
  }

  #remove(v: Uint8Array): void {
    const n = this.#views.get(v.buffer);
    if (n === undefined) return;
    if (n > 1) this.#views.set(v.buffer, n - 1);
    else {
      this.#views.delete(v.buffer);
      this.#bytes -= v.buffer.byteLength;
    }
  }
}
