/**
 * A FIFO queue in a growable ring buffer: `push`/`shift` in O(1) without the O(n) `Array#shift` or a node per item.
 * Capacity is a power of two, doubled when full and never shrunk (a mailbox's peak is its normal load).
 */
export class RingQueue<T> {
  #items: (T | undefined)[] = new Array(16);
  #head = 0;
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(item: T): void {
    if (this.#length === this.#items.length) this.#grow();
    this.#items[(this.#head + this.#length) & (this.#items.length - 1)] = item;
    this.#length++;
  }

  /** The oldest item without removing it, or undefined when empty. */
  peek(): T | undefined {
    return this.#length === 0 ? undefined : this.#items[this.#head];
  }

  /** Removes and returns the oldest item, or undefined when empty. */
  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined; // let it be collected
    this.#head = (this.#head + 1) & (this.#items.length - 1);
    this.#length--;
    return item;
  }

  #grow(): void {
    const old = this.#items;
    const items: (T | undefined)[] = new Array(old.length * 2);
    for (let i = 0; i < this.#length; i++) items[i] = old[(this.#head + i) & (old.length - 1)];
    this.#items = items;
    this.#head = 0;
  }
}
